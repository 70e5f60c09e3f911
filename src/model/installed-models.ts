/**
 * The models an operator has installed into the data directory with `cutout models add`, and
 * how a model's name becomes the file and the processing a server loads. Each lives in
 * `<dataDir>/models/installed/` as `<name>.onnx` beside `<name>.json`, which records what it
 * is (its preset, or the processing given on the command line) and the file's SHA-256.
 * Nothing here downloads: the operator fetches a preset's file from the address the preset
 * names and hands it over.
 */

import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { assembleModel, writeAtomically } from './assemble-model.js';
import { findPreset, MODEL_NAME, MODEL_PRESETS, type ModelPreset } from './model-presets.js';
import { assertProcessing, type ModelProcessing } from './model-processing.js';

/** What `<name>.json` holds. */
export interface InstalledManifest {
  name: string;
  /** The preset it was checked against; absent for a custom model. */
  preset?: string;
  /** `sha256:…` of the installed file. */
  sha256: string;
  processing: ModelProcessing;
  /** The file it was copied from, for `models list`. */
  addedFrom: string;
  addedAt: string;
}

/** A model ready to be loaded: its name, its file and how to run it. */
export interface ResolvedModel {
  name: string;
  path: string;
  processing: ModelProcessing;
  /** True for the bundled default, whose calibration ranges ship with Cutout. */
  bundled: boolean;
}

/** A model that cannot be installed, removed or loaded as asked; the message says why and what to do. */
export class ModelCatalogError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ModelCatalogError';
  }
}

export const installedDir = (dataDir: string) => join(dataDir, 'models', 'installed');

/** Hex digest of a file with `algorithm`, streamed (preset files reach a gigabyte). */
async function fileDigest(path: string, algorithm: 'md5' | 'sha256'): Promise<string> {
  const hash = createHash(algorithm);
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function hashAlgorithm(expected: string): 'md5' | 'sha256' {
  const algorithm = expected.split(':')[0];
  if (algorithm !== 'md5' && algorithm !== 'sha256') throw new Error(`preset hash ${expected} names neither md5 nor sha256`);
  return algorithm;
}

/** How to install a model that is not there, for the messages that name it. */
export function installHint(name: string): string {
  const preset = findPreset(name);
  if (!preset) return `\`npx cutout models add ${name} FILE --input-size N --mean R,G,B --std R,G,B\` installs an ONNX model under that name`;
  if (preset.bundled) return `\`npx cutout models add ${name}\` installs it from the bundled package`;
  return `download ${preset.source} and run \`npx cutout models add ${name} ${preset.fileName}\``;
}

async function readManifest(dataDir: string, name: string): Promise<InstalledManifest | undefined> {
  const path = join(installedDir(dataDir), `${name}.json`);
  if (!existsSync(path)) return undefined;
  return JSON.parse(await readFile(path, 'utf8')) as InstalledManifest;
}

/**
 * Copies `file` into the data directory as model `name`. A preset's file must have the
 * preset's hash (a wrong one is refused, naming both); any other name needs `processing`.
 * A bundled preset needs no file: it is assembled from the package. Replaces a model
 * installed before under the same name.
 *
 * @example await installModel('./data', 'birefnet-general-lite', '~/Downloads/BiRefNet-general-bb_swin_v1_tiny-epoch_232.onnx')
 */
export async function installModel(dataDir: string, name: string, file: string | undefined, processing?: ModelProcessing): Promise<InstalledManifest> {
  if (!MODEL_NAME.test(name)) throw new ModelCatalogError(`${JSON.stringify(name)} is not a model name: lower-case letters, digits, '.', '_' and '-', up to 64`);
  const preset = findPreset(name);
  if (preset && processing) throw new ModelCatalogError(`${name} is a preset: its processing is known, so --input-size, --mean, --std, --scale, --output-index, --activation and --fit do not apply`);
  if (preset?.bundled === 'medium') throw new ModelCatalogError(`${name} is the bundled default; it is always installed`);
  if (!preset && !processing) throw new ModelCatalogError(`${name} is not a preset (\`cutout models list\` shows them): a custom model needs --input-size, --mean and --std`);
  if (processing) assertProcessing(processing);
  let source = file;
  if (source === undefined) {
    if (!preset?.bundled) throw new ModelCatalogError(`models add ${name} needs the model FILE: ${installHint(name)}`);
    source = await assembleModel(dataDir, { variant: preset.bundled, rewrite: false });
  }
  const info = await stat(source).catch(() => undefined);
  if (!info?.isFile()) throw new ModelCatalogError(`${source} is not a file`);
  if (preset) await assertPresetHash(preset, source);

  const dir = installedDir(dataDir);
  await mkdir(dir, { recursive: true });
  const target = join(dir, `${name}.onnx`);
  const partial = `${target}.partial`;
  await copyFile(source, partial);
  try {
    const sha256 = `sha256:${await fileDigest(partial, 'sha256')}`;
    // Checked again on the copy: the source could have changed between the two reads.
    if (preset) await assertPresetHash(preset, partial);
    await rename(partial, target);
    const manifest: InstalledManifest = { name, preset: preset?.name, sha256, processing: preset?.processing ?? processing!, addedFrom: source, addedAt: new Date().toISOString() };
    await writeAtomically(join(dir, `${name}.json`), Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`));
    return manifest;
  } finally {
    await rm(partial, { force: true });
  }
}

async function assertPresetHash(preset: ModelPreset, path: string): Promise<void> {
  const algorithm = hashAlgorithm(preset.hash);
  const actual = `${algorithm}:${await fileDigest(path, algorithm)}`;
  if (actual !== preset.hash) {
    throw new ModelCatalogError(`${path} is not the ${preset.name} model: its hash is ${actual}, the preset's is ${preset.hash} (download it from ${preset.source})`);
  }
}

/** Removes an installed model (its file, its record and its int8 calibration). The bundled default cannot be removed. */
export async function removeModel(dataDir: string, name: string): Promise<void> {
  if (findPreset(name)?.bundled === 'medium') throw new ModelCatalogError(`${name} is the bundled default; it cannot be removed`);
  if (!(await readManifest(dataDir, name))) throw new ModelCatalogError(`no model ${JSON.stringify(name)} is installed`);
  const dir = installedDir(dataDir);
  await Promise.all([`${name}.json`, `${name}.onnx`, `${name}.int8-ranges.json`].map((file) => rm(join(dir, file), { force: true })));
}

/** One row of `models list`. */
export interface ModelListing {
  name: string;
  installed: boolean;
  /** Bytes on disk when installed. */
  size?: number;
  /** A preset's file size as published (ModelPreset.megabytes), in bytes: what installing it takes. */
  published?: number;
  architecture: string;
  licence: string;
  commercial: boolean;
  /** Where the file comes from: a preset's download address, or the file a custom model was added from. */
  source: string;
}

/** Every preset, installed or not, then every custom model installed. */
export async function listModels(dataDir: string): Promise<ModelListing[]> {
  const dir = installedDir(dataDir);
  const files = existsSync(dir) ? await readdir(dir) : [];
  const names = files.filter((file) => file.endsWith('.json') && !file.endsWith('.int8-ranges.json')).map((file) => file.slice(0, -'.json'.length));
  const sizeOf = async (name: string) => (await stat(join(dir, `${name}.onnx`)).catch(() => undefined))?.size;
  const rows: ModelListing[] = [];
  for (const preset of MODEL_PRESETS) {
    const size = preset.bundled === 'medium' ? undefined : await sizeOf(preset.name);
    rows.push({
      name: preset.name,
      installed: preset.bundled === 'medium' || size !== undefined,
      size,
      published: preset.megabytes * 1e6,
      architecture: preset.architecture,
      licence: preset.licence,
      commercial: preset.commercial,
      source: preset.source,
    });
  }
  for (const name of names.filter((name) => !findPreset(name)).sort()) {
    const manifest = await readManifest(dataDir, name);
    if (!manifest) continue;
    rows.push({ name, installed: true, size: await sizeOf(name), architecture: 'custom', licence: 'as its publisher states', commercial: true, source: manifest.addedFrom });
  }
  return rows;
}

/**
 * The file and processing of model `name`: the bundled default (assembled and rewritten on
 * first use, assemble-model.ts) or one installed with `models add`. Throws
 * {@link ModelCatalogError} saying how to install it when it is not there.
 */
export async function resolveModel(dataDir: string, name: string): Promise<ResolvedModel> {
  const preset = findPreset(name);
  if (preset?.bundled === 'medium') return { name, path: await assembleModel(dataDir), processing: preset.processing, bundled: true };
  const manifest = await readManifest(dataDir, name).catch((error: unknown) => {
    throw new ModelCatalogError(`the record of model ${name} (${join(installedDir(dataDir), `${name}.json`)}) cannot be read; install it again: ${installHint(name)}`, { cause: error });
  });
  const path = join(installedDir(dataDir), `${name}.onnx`);
  if (!manifest || !existsSync(path)) throw new ModelCatalogError(`model ${name} is not installed in ${installedDir(dataDir)}: ${installHint(name)}`);
  return { name, path, processing: manifest.processing, bundled: false };
}
