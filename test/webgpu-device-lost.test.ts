import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CutoutError } from '../src/errors.js';
import { ModelService } from '../src/model/model-service.js';
import { ISNET_PROCESSING } from '../src/model/model-processing.js';
import { loadSegmenter } from '../src/model/onnx-segmenter.js';
import { vulkanDrivers } from '../src/model/vulkan-drivers.js';
import { startTestApp } from './helpers/app.js';
import { makePhoto } from './helpers/images.js';
import { isnetAtSize } from './helpers/isnet-at-size.js';

// A GPU that stops answering (a lost or hung device) must not hang requests: off the CPU, a
// run that outlasts its stall limit fails the model, every waiting and later request gets a
// 503 at once, and /readyz turns red with the reason. The device is WebGPU on lavapipe
// (webgpu.test.ts says why and when this runs), "lost" by a stall limit shorter than a pass.

const SIDE = 160;
const run = vulkanDrivers().some((driver) => driver.software && /lvp/.test(driver.library)) || Boolean(process.env.CI);
const blank = () => ({ data: new Uint8Array(3 * SIDE * SIDE), width: SIDE, height: SIDE, channels: 3 as const });

describe.skipIf(!run)('a GPU that stops answering', () => {
  it('fails its requests with 503 not_ready at once and turns /readyz red; never hangs', { timeout: 180_000 }, async () => {
    const path = await isnetAtSize(join(tmpdir(), 'cutout-test-model'), SIDE);
    const segmenter = await loadSegmenter(path, { threads: 1, executionProvider: 'webgpu', processing: { ...ISNET_PROCESSING, inputSize: SIDE } });
    const model = ModelService.ofSegmenter(segmenter);
    const t = await startTestApp({}, { model });
    try {
      // It runs: a pass answers, and the server is ready.
      await segmenter.segment([blank()]);
      expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);

      const photo = await makePhoto('jpeg', 320, 240);
      const remove = async () =>
        t.app.inject({
          method: 'POST',
          url: '/api/v1/background/remove/base64',
          headers: { authorization: await t.managedToken(), 'content-type': 'application/json' },
          payload: { image_base64: photo.toString('base64') },
        });

      // A request whose pass stalls: 503 not_ready once the limit is past, not at its deadline.
      segmenter.setStallLimit(50);
      const started = performance.now();
      const inFlight = await remove();
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(inFlight.statusCode, inFlight.body).toBe(503);
      expect(inFlight.json()).toMatchObject({ type: 'urn:cutout:error:not_ready', detail: expect.stringMatching(/cannot run on webgpu any more \(a pass has not answered after 50 ms\)/) });

      const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      expect(ready.json()).toMatchObject({ status: 'failed', reason: expect.stringContaining('cannot run on webgpu') });

      // Every later run is refused at once, whatever the device does.
      const later = await remove();
      expect(later.statusCode).toBe(503);
      expect(later.json()).toMatchObject({ type: 'urn:cutout:error:not_ready' });
      await expect(segmenter.segment([blank()])).rejects.toBeInstanceOf(CutoutError);
    } finally {
      await t.close();
      // Waits for the pass it gave up on to leave the worker before stopping it.
      await segmenter.close();
    }
  });
});
