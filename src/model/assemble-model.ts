import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { convertModelToFp32 } from './fp32-model.js';
import { keepOnlyOutput } from './mask-output-only.js';

/** The model package Cutout ships with (AGPL-3.0); its version is pinned in package.json. */
export const MODEL_PACKAGE = '@imgly/background-removal-data';

export type ModelVariant = 'medium' | 'small';

interface ResourceEntry {
  size: number;
  chunks: { hash: string; offsets: [number, number] }[];
}

export interface AssembleOptions {
  variant?: ModelVariant;
  /**
   * Also write Cutout's rewrite of the model and return its path (default true): float32
   * weights without the Casts (fp32-model.ts), and the mask as its only output
   * (mask-output-only.ts). `false` gives the file as the package ships it.
   */
  rewrite?: boolean;
  /**
   * The rewrite's weights (default `fp32`). `fp16` keeps them as the package ships them,
   * float16, and only drops the outputs besides the mask: the form a GPU runs (WebGPU
   * computes in float16 natively, and the float32 rewrite only spares a CPU its Casts).
   */
  form?: 'fp32' | 'fp16';
}

/** The output of IS-Net that is the mask; the server reads this one. */
export const MASK_OUTPUT = 'output';

/** Writes a file under a temporary name and renames it into place, so no reader sees half of it. */
export async function writeAtomically(target: string, data: Uint8Array): Promise<void> {
  const partial = `${target}.${randomBytes(6).toString('hex')}.partial`;
  try {
    await writeFile(partial, data, { flush: true });
    await rename(partial, target);
  } finally {
    await rm(partial, { force: true });
  }
}

/**
 * Builds the bundled IS-Net model file from the chunks in `@imgly/background-removal-data`
 * (each chunk is a file named by its SHA-256) into `<dataDir>/models/`, verifying every
 * chunk's hash and the total size, and writing atomically; then, unless `rewrite: false`,
 * Cutout's rewrite of it beside it. Files already there are reused. Returns the path of the
 * `.onnx` file to load.
 *
 * @example const modelPath = await assembleModel('./data') // ./data/models/isnet-medium-fe1b9f06-fp32-mask.onnx
 */
export async function assembleModel(dataDir: string, options: AssembleOptions = {}): Promise<string> {
  const original = await assembleOriginal(dataDir, options.variant ?? 'medium');
  if (options.rewrite === false) return original;
  if (options.form === 'fp16') {
    const masked = original.replace(/\.onnx$/, '-mask.onnx');
    if (await stat(masked).catch(() => undefined)) return masked;
    const { model, droppedNodes } = keepOnlyOutput(await readFile(original), MASK_OUTPUT);
    if (droppedNodes === 0) return original;
    await writeAtomically(masked, model);
    return masked;
  }
  // A new name whenever the rewrite changes, so that a data directory keeps no stale one.
  const target = original.replace(/\.onnx$/, '-fp32-mask.onnx');
  if (await stat(target).catch(() => undefined)) return target;
  const fp32 = convertModelToFp32(await readFile(original));
  const { model, droppedNodes } = keepOnlyOutput(fp32.model, MASK_OUTPUT);
  if (fp32.converted === 0 && droppedNodes === 0) return original;
  await writeAtomically(target, model);
  return target;
}

async function assembleOriginal(dataDir: string, variant: ModelVariant): Promise<string> {
  const require = createRequire(import.meta.url);
  const resourcesPath = require.resolve(`${MODEL_PACKAGE}/dist/resources.json`);
  const resources = JSON.parse(await readFile(resourcesPath, 'utf8')) as Record<string, ResourceEntry>;
  const entry = resources[`/models/${variant}`];
  if (!entry) throw new Error(`${MODEL_PACKAGE} has no /models/${variant} in ${resourcesPath}`);

  const target = join(dataDir, 'models', `isnet-${variant}-${entry.chunks[0].hash.slice(0, 8)}.onnx`);
  const existing = await stat(target).catch(() => undefined);
  if (existing?.size === entry.size) return target;

  await mkdir(dirname(target), { recursive: true });
  const chunks: Buffer[] = [];
  let written = 0;
  for (const chunk of entry.chunks) {
    const bytes = await readFile(join(dirname(resourcesPath), chunk.hash));
    const [from, to] = chunk.offsets;
    const digest = createHash('sha256').update(bytes).digest('hex');
    if (digest !== chunk.hash || bytes.length !== to - from || from !== written) {
      throw new Error(`model chunk ${chunk.hash} of ${MODEL_PACKAGE} is corrupt (sha256 ${digest}, ${bytes.length} bytes); reinstall the package`);
    }
    chunks.push(bytes);
    written += bytes.length;
  }
  if (written !== entry.size) throw new Error(`assembled model has ${written} bytes, expected ${entry.size}`);
  await writeAtomically(target, Buffer.concat(chunks));
  return target;
}
