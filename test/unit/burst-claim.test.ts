import { afterAll, describe, expect, it } from 'vitest';
import { InferenceQueue } from '../../src/inference/inference-queue.js';
import { FinishThread } from '../../src/pipeline/finish-thread.js';
import { removeBackground } from '../../src/pipeline/remove-background.js';
import { fakeSegmenter } from '../helpers/fake-segmenter.js';
import { makePhoto } from '../helpers/images.js';

describe('a burst at an idle model', () => {
  const finisher = new FinishThread();
  afterAll(() => finisher.close());

  it('starts the full-size work of the first image at once, the others\' at their turn', async () => {
    const queue = new InferenceQueue({ concurrency: 1, maxQueued: 8 });
    const segmenter = fakeSegmenter(50);
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
    // Each call got as far as its model-sized decode: only the first saw the model free.
    expect(begun).toBe(1);
    const answers = await Promise.all(removals);
    expect(answers.map(({ width, height }) => [width, height])).toEqual([[320, 240], [320, 240], [320, 240]]);
    expect(begun).toBe(3); // the other two when the model took them
    expect(segmenter.runs).toBe(3);
    expect(queue.idle).toBe(true);
  });
});
