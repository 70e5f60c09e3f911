import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installModel } from '../src/model/installed-models.js';
import { ISNET_PROCESSING } from '../src/model/model-processing.js';
import { vulkanDrivers } from '../src/model/vulkan-drivers.js';
import { makePhoto } from './helpers/images.js';
import { isnetAtSize } from './helpers/isnet-at-size.js';
import { exchangeOverHttp, freshDataDir, send, startServer, type ServerProcess } from './processes/server-process.js';

// CUTOUT_EXECUTION_PROVIDER=webgpu end to end on Mesa's lavapipe (software Vulkan, from
// Debian's bookworm-backports: bookworm's own Mesa lacks what Dawn needs), the same WebGPU
// provider a GPU host runs. lavapipe is slow (a 1024² pass takes about a minute), so the
// servers run the bundled IS-Net made to work at 160² (helpers/isnet-at-size.ts), installed
// as a custom model: the masks test the provider, not the size. Skipped only where lavapipe
// is not installed and CI is unset; under CI it must run (.ci/run installs it).

const SIDE = 160;
const lavapipe = vulkanDrivers().find((driver) => driver.software && /lvp/.test(driver.library));
const run = lavapipe !== undefined || Boolean(process.env.CI);
const MODEL = `isnet-${SIDE}`;

/** The data directories this file made (each holds an assembled model): removed at its end. */
const dataDirs: string[] = [];
afterAll(() => Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true }))));

/** A data directory with a token and the small model installed as MODEL. */
async function dataDirWithModel(prefix: string): Promise<{ dataDir: string; tokenId: string }> {
  const made = await freshDataDir(prefix);
  dataDirs.push(made.dataDir);
  await installModel(made.dataDir, MODEL, await isnetAtSize(join(tmpdir(), 'cutout-test-model'), SIDE), { ...ISNET_PROCESSING, inputSize: SIDE });
  return made;
}

/** A server on `provider` serving MODEL, lavapipe its only Vulkan driver. */
async function serve(provider: string, env: Record<string, string> = {}): Promise<{ server: ServerProcess; token: string }> {
  const { dataDir, tokenId } = await dataDirWithModel(`cutout-webgpu-${provider}-`);
  const server = await startServer(
    {
      CUTOUT_DATA_DIR: dataDir,
      CUTOUT_MODELS: MODEL,
      CUTOUT_EXECUTION_PROVIDER: provider,
      CUTOUT_MODEL_PRECISION: provider === 'cpu' ? 'fp32' : 'auto',
      CUTOUT_REQUEST_TIMEOUT_MS: '120000',
      VK_DRIVER_FILES: lavapipe?.manifest ?? '',
      ...env,
    },
    180_000,
  );
  return { server, token: await exchangeOverHttp(server.origin, tokenId) };
}

/** The answer's alpha channel, thresholded: the cut. */
async function cutOf(origin: string, token: string, photo: Buffer): Promise<Uint8Array> {
  const answer = await send(origin, 'POST', '/api/v1/background/remove/base64', {
    headers: { authorization: token, 'content-type': 'application/json', accept: 'image/png' },
    body: JSON.stringify({ image_base64: photo.toString('base64') }),
  });
  expect(answer.status, answer.body.toString().slice(0, 500)).toBe(200);
  const alpha = await sharp(answer.body).extractChannel(3).raw().toBuffer();
  return Uint8Array.from(alpha, (value) => (value >= 128 ? 1 : 0));
}

function iou(a: Uint8Array, b: Uint8Array): number {
  let both = 0;
  let either = 0;
  for (let i = 0; i < a.length; i++) {
    both += a[i] & b[i];
    either += a[i] | b[i];
  }
  return either === 0 ? 1 : both / either;
}

const readyz = async (server: ServerProcess) => JSON.parse((await send(server.origin, 'GET', '/readyz')).body.toString());

describe.skipIf(!run)('WebGPU on lavapipe', () => {
  let webgpu: { server: ServerProcess; token: string };
  let cpu: { server: ServerProcess; token: string };

  beforeAll(async () => {
    if (!lavapipe) throw new Error('CI is set but lavapipe (mesa-vulkan-drivers from bookworm-backports) is not installed: .ci/run installs it');
    await isnetAtSize(join(tmpdir(), 'cutout-test-model'), SIDE);
    [webgpu, cpu] = await Promise.all([serve('webgpu'), serve('cpu')]);
  }, 240_000);
  afterAll(async () => {
    await Promise.all([webgpu?.server.stop(), cpu?.server.stop()]);
  });

  it('/readyz names the provider, the precision and the pass time measured at start', async () => {
    const ready = await readyz(webgpu.server);
    expect(ready).toMatchObject({ status: 'ready', provider: 'webgpu', providerReason: 'CUTOUT_EXECUTION_PROVIDER=webgpu', precision: 'stored' });
    expect(ready.passMs).toBeGreaterThan(0);
    expect(ready.models).toEqual([expect.objectContaining({ name: MODEL, provider: 'webgpu', inputSize: SIDE })]);
    const ready2 = await readyz(cpu.server);
    expect(ready2).toMatchObject({ provider: 'cpu', precision: 'fp32' });
  });

  it('cuts three photos as the CPU provider does (IoU ≥ 0.99)', { timeout: 240_000 }, async () => {
    const photos = [await makePhoto('jpeg', 640, 480), await makePhoto('png', 360, 540), await sharp(await makePhoto('png', 500, 500)).modulate({ brightness: 0.6, hue: 120 }).jpeg().toBuffer()];
    for (const photo of photos) {
      const [onGpu, onCpu] = await Promise.all([cutOf(webgpu.server.origin, webgpu.token, photo), cutOf(cpu.server.origin, cpu.token, photo)]);
      // The photos have a subject: the test would pass on two empty masks otherwise.
      expect(onCpu.reduce((sum, v) => sum + v, 0)).toBeGreaterThan(onCpu.length / 20);
      expect(iou(onGpu, onCpu)).toBeGreaterThanOrEqual(0.99);
    }
  });

  it('auto runs on the CPU when the only Vulkan driver is a software one, and says why', { timeout: 120_000 }, async () => {
    const { server } = await serve('auto');
    try {
      const ready = await readyz(server);
      expect(ready).toMatchObject({ status: 'ready', provider: 'cpu' });
      expect(ready.providerReason).toMatch(/^auto: no GPU for WebGPU here \(only software Vulkan drivers \(lvp_icd/);
      // Nothing from Dawn: auto did not start WebGPU at all.
      expect(server.output()).not.toMatch(/^Warning:/m);
    } finally {
      await server.stop();
    }
  });

  it('a start on webgpu where Vulkan finds no adapter stops, saying what to install', { timeout: 120_000 }, async () => {
    const failed = await serve('webgpu', { VK_DRIVER_FILES: join(tmpdir(), 'no-such-icd.json') }).then(
      () => undefined,
      (error: Error) => error.message,
    );
    expect(failed).toMatch(/exited with code 1 while starting/);
    expect(failed).toMatch(/CUTOUT_EXECUTION_PROVIDER=webgpu, but WebGPU found no GPU adapter \(Failed to get a WebGPU adapter: No supported adapters; no Vulkan driver \(no \*_icd\.json\)\): install the Vulkan loader/);
    expect(failed).toContain('libvulkan1');
    expect(failed).toContain('mesa-vulkan-drivers');
    // Dawn's words, not ONNX Runtime's C++ source lines.
    expect(failed).not.toContain('webgpu_context.cc');
    expect(existsSync(join(tmpdir(), 'no-such-icd.json'))).toBe(false);
  });
});
