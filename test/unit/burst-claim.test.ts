import type { RawImage } from '../../src/image/raw-image.js';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { InferenceQueue } from '../../src/inference/inference-queue.js';
import { FinishThread } from '../../src/pipeline/finish-thread.js';
import { removeBackground } from '../../src/pipeline/remove-background.js';
import { uniformMask } from '../helpers/fake-segmenter.js';
import { makePhoto } from '../helpers/images.js';

describe('a burst at an idle model', () => {
  const finisher = new FinishThread();
  afterAll(() => finisher.close());

  it('starts the full-size work of the first image at once, the others\' at their turn', async () => {
    const queue = new InferenceQueue({ concurrency: 1, maxQueued: 8 });
    // A model whose passes end when the test says, so each turn can be looked at.
    const passes: (() => void)[] = [];
    const segmenter = {
      size: 1024,
      runs: 0,
      async segment(pictures: readonly RawImage[]) {
        segmenter.runs++;
        await new Promise<void>((resolve) => passes.push(resolve));
        return pictures.map(() => uniformMask(1024, 255));
      },
      close: async () => {},
    };
    const begin = finisher.begin.bind(finisher);
    let begun = 0;
    finisher.begin = (...args) => {
      begun++;
      return begin(...args);
    };
    const photo = await makePhoto('jpeg', 320, 240);
    const removals = Array.from({ length: 3 }, () =>
      removeBackground(photo, { segmenter, finisher, maxPixels: 50e6, slot: queue }),
    );
    // Only the first saw the model free when it arrived.
    expect(begun).toBe(1);
    // Once all three have decoded for the model (one in it, two waiting for it), the only ones
    // begun are the first and the one the model took (the claim does not hold the model for
    // the first: whichever decoded first took it). Then one more with each turn.
    await vi.waitFor(() => expect([queue.running, queue.queued]).toEqual([1, 2]), { timeout: 30_000, interval: 5 });
    for (const turn of [1, 2, 3]) {
      if (turn > 1) {
        passes.shift()!();
        await vi.waitFor(() => expect(segmenter.runs).toBe(turn), { timeout: 30_000, interval: 5 });
      }
      expect(segmenter.runs).toBe(turn);
      expect(begun, `turn ${turn}`).toBeGreaterThanOrEqual(turn);
      expect(begun, `turn ${turn}`).toBeLessThanOrEqual(Math.min(3, 1 + turn));
    }
    passes.shift()!();
    const answers = await Promise.all(removals);
    expect(answers.map(({ width, height }) => [width, height])).toEqual([[320, 240], [320, 240], [320, 240]]);
    expect(begun).toBe(3);
    expect(segmenter.runs).toBe(3);
    expect(queue.idle).toBe(true);
  });
});
