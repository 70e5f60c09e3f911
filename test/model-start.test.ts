import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { childEnv, killLeftoverChildren, spawnTs } from './processes/server-process.js';
import { fp32ModelPath } from './helpers/test-model.js';

/** Whether onnxruntime-node's CUDA libraries are absent here, as the default install leaves them. */
const cudaMissing =
  process.platform === 'linux' &&
  !existsSync(join(createRequire(import.meta.url).resolve('onnxruntime-node'), '..', '..', 'bin', 'napi-v6', 'linux', process.arch, 'libonnxruntime_providers_cuda.so'));

/** Starts `src/main.ts` with `env` and resolves with its exit code and everything it wrote. */
function startAndWait(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawnTs('src/main.ts', [], childEnv({ PORT: '0', LOG_LEVEL: 'info', CUTOUT_INFERENCE_THREADS: '1', ...env }));
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}

/** The message of the server's fatal log line. */
const fatal = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .find((line) => line.level === 60)?.msg;

describe('a start that cannot serve its models stops, saying why', () => {
  let dataDir: string;
  let modelPath: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cutout-model-start-'));
    modelPath = await fp32ModelPath();
  });
  afterEach(killLeftoverChildren);
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('for a model that is not installed', { timeout: 120_000 }, async () => {
    const missing = await startAndWait({ CUTOUT_DATA_DIR: join(dataDir, 'a'), CUTOUT_MODEL_PATH: modelPath, CUTOUT_MODELS: 'isnet,birefnet-general-lite' });
    expect(missing.code, missing.output).toBe(1);
    expect(fatal(missing.output)).toMatch(
      /^the model could not be loaded: model birefnet-general-lite is not installed in .*: download https:\/\/github\.com\/danielgatis\/rembg\/releases\/download\/v0\.0\.0\/BiRefNet-general-bb_swin_v1_tiny-epoch_232\.onnx and run `npx cutout models add birefnet-general-lite/,
    );
  });

  // On Linux, whose onnxruntime-node build has CUDA but whose install skipped its libraries.
  it.runIf(cudaMissing)('for an execution provider that is not there: CUDA without its libraries, CoreML off macOS', { timeout: 120_000 }, async () => {
    const [cuda, coreml] = await Promise.all([
      startAndWait({ CUTOUT_DATA_DIR: join(dataDir, 'b'), CUTOUT_MODEL_PATH: modelPath, CUTOUT_EXECUTION_PROVIDER: 'cuda' }),
      startAndWait({ CUTOUT_DATA_DIR: join(dataDir, 'c'), CUTOUT_MODEL_PATH: modelPath, CUTOUT_EXECUTION_PROVIDER: 'coreml' }),
    ]);
    expect(cuda.code, cuda.output).toBe(1);
    expect(fatal(cuda.output)).toContain("CUTOUT_EXECUTION_PROVIDER=cuda, but ONNX Runtime's cuda libraries are not installed");
    expect(fatal(cuda.output)).toContain('ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install.js');
    expect(coreml.code, coreml.output).toBe(1);
    expect(fatal(coreml.output)).toMatch(/CUTOUT_EXECUTION_PROVIDER=coreml, but the installed onnxruntime-node offers cpu, .* on linux\//);
  });
});
