// Run by deploy/Dockerfile in /opt/cutout after `npm prune --omit=dev`: takes out of
// node_modules what the server in the image never loads, and prints what it took and its size.
// - onnxruntime-node: the binaries of other platforms and CPUs (it loads
//   bin/napi-v6/<platform>/<arch>, src/model/segmenter-worker.ts).
// - sharp: its WebAssembly build and other platforms' binaries (it loads
//   @img/sharp-<platform>-<arch> and falls back to WebAssembly only where there is none).
// - onnxruntime-web: a dependency of the model data package; Cutout runs onnxruntime-node.
// - @imgly/background-removal-data: the medium model's chunks (the image serves model.onnx,
//   assembled from them at build time, through CUTOUT_MODEL_PATH) and the WebAssembly builds of
//   onnxruntime-web; kept: resources.json and the small model's chunks, which
//   `cutout models add isnet-small` assembles (src/model/installed-models.ts).
// - better-sqlite3: the SQLite sources and the compiler's intermediate files; kept:
//   build/Release/better_sqlite3.node, which its lib/ loads.
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Bytes under a path (files only; links not followed). */
function sizeOf(path) {
  const info = statSync(path, { throwIfNoEntry: false });
  if (!info) return 0;
  if (!info.isDirectory()) return info.size;
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0);
}

const removed = [];
function remove(path, why) {
  const bytes = sizeOf(path);
  if (bytes === 0 && !statSync(path, { throwIfNoEntry: false })) return;
  rmSync(path, { recursive: true, force: true });
  removed.push({ path, why, bytes });
}

const ort = 'node_modules/onnxruntime-node/bin/napi-v6';
const loaded = join(ort, process.platform, process.arch);
statSync(join(loaded, 'onnxruntime_binding.node')); // throws, and fails the build, if this platform's binary is missing
for (const platform of readdirSync(ort)) {
  if (platform !== process.platform) remove(join(ort, platform), 'another platform');
  else for (const arch of readdirSync(join(ort, platform))) if (arch !== process.arch) remove(join(ort, platform, arch), 'another CPU');
}

const sharpHere = [`sharp-${process.platform}-${process.arch}`, `sharp-libvips-${process.platform}-${process.arch}`];
statSync(join('node_modules/@img', sharpHere[0])); // sharp's binary for this platform must be there
for (const name of readdirSync('node_modules/@img')) {
  if (name.startsWith('sharp-') && !sharpHere.includes(name)) remove(join('node_modules/@img', name), 'another platform');
}

remove('node_modules/onnxruntime-web', 'not loaded');

const data = 'node_modules/@imgly/background-removal-data/dist';
const resources = JSON.parse(readFileSync(join(data, 'resources.json'), 'utf8'));
const kept = new Set(resources['/models/small'].chunks.map((chunk) => chunk.hash));
for (const name of readdirSync(data)) {
  if (/^[0-9a-f]{64}$/.test(name) && !kept.has(name)) remove(join(data, name), 'a chunk of the medium model (model.onnx) or of onnxruntime-web');
}

const sqlite = 'node_modules/better-sqlite3';
for (const path of ['deps', 'src', 'build/Release/obj', 'build/Release/obj.target', 'build/Release/sqlite3.a', 'build/Release/test_extension.node', 'build/Release/.deps', 'build/deps']) {
  remove(join(sqlite, path), 'build-time only');
}
statSync(join(sqlite, 'build/Release/better_sqlite3.node'));

const byWhy = new Map();
for (const { why, bytes } of removed) byWhy.set(why, (byWhy.get(why) ?? 0) + bytes);
for (const [why, bytes] of byWhy) console.log(`trim-node-modules: ${(bytes / 2 ** 20).toFixed(1)} MiB removed: ${why}`);
console.log(`trim-node-modules: ${(removed.reduce((sum, r) => sum + r.bytes, 0) / 2 ** 20).toFixed(1)} MiB removed in all; node_modules now ${(sizeOf('node_modules') / 2 ** 20).toFixed(1)} MiB`);
