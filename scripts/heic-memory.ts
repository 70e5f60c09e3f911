/**
 * What a large HEIC costs the server: its memory while one, then two, 49-megapixel HEIC
 * photos are removed at once, and what it keeps afterwards; and how long a tiny HEIC waits
 * when it arrives just behind a large one. Each phase runs on a fresh server compiled and
 * started as `npm run bench` does (the start script's malloc variables included):
 *
 * - `one`, `two`: RSS once ready, the peak (VmHWM, reset before the requests), RSS when the
 *   answers are in, 30 s and 60 s later;
 * - `jpeg` (with `--jpeg`): the same as `one` for the same pixels as a JPEG, for comparison;
 * - `wait`: a tiny HEIC's latency alone (after one warm-up), then sent 0.5 s after a large
 *   HEIC, with the load average beside each time (the machine may be shared).
 *
 * First it prints how much WebAssembly memory libheif holds after a tiny, a 12 MP and the
 * large HEIC, decoded one after the other in this process (this checkout's decoder).
 *
 * The photos are made once (heif-enc, from libheif-examples) and kept in `data/heic-memory/`.
 * `--root DIR` measures another checkout of Cutout (the model is still this one's).
 *
 *   npx tsx scripts/heic-memory.ts [--root DIR] [--side 7000] [--phases one,two,wait] [--jpeg]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { assembleModel } from '../src/model/assemble-model.js';
import { decodeHeic, decoderMemoryBytes } from '../src/pipeline/heic-decoder.js';
import { httpRequest } from './bench/http-load.js';
import { describeMachine } from './bench/machine.js';
import { compileServer, startCutoutServer, type CutoutServer } from './lib/server-process.js';
import { multipartBody } from './lib/multipart-body.js';
import { scaledPhoto } from './lib/scaled-photo.js';
import { memoryMiB } from './lib/process-memory.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    root: { type: 'string', default: ROOT },
    side: { type: 'string', default: '7000' },
    phases: { type: 'string', default: 'one,two,wait' },
    jpeg: { type: 'boolean', default: false },
    photo: { type: 'string', default: join(ROOT, '../shared/fixtures/photos/animal-3.jpg') },
    settle: { type: 'string', default: '60' },
  },
});
const root = resolve(values.root);
const side = Number(values.side);
const settleSeconds = Number(values.settle);
const phases = new Set([...values.phases.split(','), ...(values.jpeg ? ['jpeg'] : [])]);

/** The photo scaled to `width × height`, as a JPEG and as an HEIC of the same pixels. */
async function makePhotos(width: number, height: number): Promise<{ jpeg: Buffer; heic: Buffer }> {
  return { jpeg: await scaledPhoto(ROOT, values.photo, width, height, 'jpeg'), heic: await scaledPhoto(ROOT, values.photo, width, height, 'heic') };
}

const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

async function remove(server: CutoutServer, bytes: Buffer, name: string): Promise<{ status: number; ms: number }> {
  const { body, contentType } = multipartBody([{ name: 'file', filename: name, contentType: 'application/octet-stream', data: bytes }]);
  const answer = await httpRequest(`${server.baseUrl}/api/v1/background/remove/multipart`, {
    method: 'POST',
    headers: { authorization: server.managedToken, 'content-type': contentType, accept: 'image/png' },
    body,
    timeoutMs: 300_000,
  });
  if (answer.status !== 200) throw new Error(`${name}: ${answer.status} ${answer.body.subarray(0, 300).toString()}`);
  return { status: answer.status, ms: answer.ms };
}

const buildDir = join(root, 'bench/.build');
const warning = (await compileServer(root, buildDir)).warning;
if (warning) console.warn(warning);
await assembleModel(join(ROOT, 'data'));
const large = await makePhotos(side, side);
const tiny = await makePhotos(320, 240);
const phone = await makePhotos(4000, 3000);
const machine = describeMachine();
console.log(`# HEIC memory: ${root}`);
console.log(`${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Node ${machine.node}; load average at start ${machine.loadAverage.join(' ')}`);
const held: string[] = [];
for (const [label, bytes] of [['320×240', tiny.heic], ['4000×3000', phone.heic], [`${side}×${side}`, large.heic]] as const) {
  await decodeHeic(bytes, { maxPixels: Infinity, orientation: 1 });
  held.push(`${label} ${(decoderMemoryBytes() / 2 ** 20).toFixed(0)} MiB`);
}
console.log(`libheif's WebAssembly memory after decoding, one after the other: ${held.join(', ')}`);
console.log(`large photo ${side}×${side} (${((side * side) / 1e6).toFixed(1)} MP): HEIC ${(large.heic.length / 2 ** 20).toFixed(1)} MiB, JPEG ${(large.jpeg.length / 2 ** 20).toFixed(1)} MiB; tiny HEIC 320×240`);

async function withServer<T>(run: (server: CutoutServer, mib: (field: 'VmRSS' | 'VmHWM') => Promise<number>) => Promise<T>): Promise<T> {
  const work = await mkdtemp(join(tmpdir(), 'cutout-heic-memory-'));
  const server = await startCutoutServer({ root, buildDir, dataDir: join(work, 'data'), modelsDir: join(ROOT, 'data/models'), threads: Number(process.env.CUTOUT_INFERENCE_THREADS) || availableParallelism() });
  const mib = (field: 'VmRSS' | 'VmHWM') => memoryMiB(server.pid, field);
  try {
    return await run(server, mib);
  } finally {
    await server.stop();
    await rm(work, { recursive: true, force: true });
  }
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** `count` removals of `bytes` at once on a fresh server: memory before, at the peak, after. */
async function memoryPhase(label: string, bytes: Buffer, name: string, count: number): Promise<void> {
  await withServer(async (server, mib) => {
    const ready = await mib('VmRSS');
    await writeFile(`/proc/${server.pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: count }, () => remove(server, bytes, name)));
    const wall = (performance.now() - started) / 1000;
    const peak = await mib('VmHWM');
    const atEnd = await mib('VmRSS');
    const loadAtEnd = load();
    await sleep(settleSeconds * 500);
    const half = await mib('VmRSS');
    await sleep(settleSeconds * 500);
    const full = await mib('VmRSS');
    const f = (n: number) => n.toFixed(0);
    console.log(
      `${label}: ready ${f(ready)} MiB, peak ${f(peak)} MiB, at the answer ${f(atEnd)} MiB, ${settleSeconds / 2} s later ${f(half)} MiB, ${settleSeconds} s later ${f(full)} MiB; ` +
        `answers ${answers.map((a) => (a.ms / 1000).toFixed(1)).join(', ')} s, all in ${wall.toFixed(1)} s (load average ${loadAtEnd})`,
    );
  });
}

if (phases.has('one')) await memoryPhase('one 49 MP HEIC', large.heic, 'large.heic', 1);
if (phases.has('two')) await memoryPhase('two 49 MP HEICs at once', large.heic, 'large.heic', 2);
if (phases.has('jpeg')) await memoryPhase('one 49 MP JPEG', large.jpeg, 'large.jpg', 1);
if (phases.has('wait')) {
  await withServer(async (server) => {
    await remove(server, tiny.heic, 'tiny.heic'); // warms the model and starts the HEIC thread
    const alone = await remove(server, tiny.heic, 'tiny.heic');
    const loadAlone = load();
    const big = remove(server, large.heic, 'large.heic');
    await sleep(500);
    const behind = await remove(server, tiny.heic, 'tiny.heic');
    const loadBehind = load();
    const bigDone = await big;
    console.log(
      `tiny HEIC alone ${(alone.ms / 1000).toFixed(2)} s (load average ${loadAlone}); ` +
        `sent 0.5 s after a 49 MP HEIC ${(behind.ms / 1000).toFixed(2)} s (load average ${loadBehind}); the large one ${(bigDone.ms / 1000).toFixed(1)} s`,
    );
  });
}
