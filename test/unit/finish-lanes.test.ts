import sharp from 'sharp';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FinishLanes } from '../../src/pipeline/finish-lanes.js';
import type { FinishedAnswer, Finisher, ImageFinishing } from '../../src/pipeline/finish-thread.js';
import type { RawImage } from '../../src/image/raw-image.js';
import type { DecodedPixels, PhotoInput } from '../../src/pipeline/photo-input.js';
import { DEFAULT_REFINE_SETTINGS } from '../../src/pipeline/refine/refine-cutout.js';

const SPEC = { spec: {}, maxPixels: 50e6 };

/** A finisher that records what it was given and answers when the test says. */
class RecordingFinisher implements Finisher {
  readonly begun: unknown[] = [];
  readonly answers: ((answer: FinishedAnswer) => void)[] = [];
  closed = false;
  begin(photo: Uint8Array): ImageFinishing {
    this.begun.push(photo);
    return {
      prepare: () => {},
      finish: () => new Promise<FinishedAnswer>((resolve) => this.answers.push(resolve)),
      cancel: () => {},
    };
  }
  async close(): Promise<void> {
    this.closed = true;
  }
}

const mask = (): RawImage => ({ data: new Uint8Array(4), width: 2, height: 2, channels: 1 });

describe('the finish lanes', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('send a photo over the line to the large lane and the rest, or an unknown size, to the small one', () => {
    const made: RecordingFinisher[] = [];
    const lanes = new FinishLanes({ largePixels: 1000, newThread: () => made[made.push(new RecordingFinisher()) - 1] });
    const [small, large, unknown] = [new Uint8Array([1]), new Uint8Array([2]), new Uint8Array([3])];
    lanes.begin(small, { ...SPEC, pixels: 1000 });
    expect(lanes.largeLaneStarted).toBe(false);
    lanes.begin(large, { ...SPEC, pixels: 1001 });
    lanes.begin(unknown, SPEC);
    expect(made).toHaveLength(2);
    expect(made[0].begun).toEqual([small, unknown]);
    expect(made[1].begun).toEqual([large]);
  });

  it('retire the large lane once it has been idle, and start a new one for the next large photo', async () => {
    vi.useFakeTimers();
    const made: RecordingFinisher[] = [];
    const lanes = new FinishLanes({ largePixels: 10, retireAfterMs: 1000, newThread: () => made[made.push(new RecordingFinisher()) - 1] });
    const first = lanes.begin(new Uint8Array([1]), { ...SPEC, pixels: 100 });
    const second = lanes.begin(new Uint8Array([2]), { ...SPEC, pixels: 100 });
    const answered = first.finish(mask());
    second.cancel();
    await vi.advanceTimersByTimeAsync(5000);
    // The first image still waits for its answer: the lane is kept.
    expect(made[1].closed).toBe(false);
    made[1].answers[0]({} as FinishedAnswer);
    await answered;
    await vi.advanceTimersByTimeAsync(999);
    expect(made[1].closed).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(made[1].closed).toBe(true);
    expect(lanes.largeLaneStarted).toBe(false);

    lanes.begin(new Uint8Array([3]), { ...SPEC, pixels: 100 });
    expect(made).toHaveLength(3);
    expect(made[0].closed).toBe(false);
    await lanes.close();
    expect(made.every((finisher) => finisher.closed)).toBe(true);
  });

  it('finish a small photo while a large one, begun before it, is still being finished', async () => {
    const lanes = new FinishLanes({ largePixels: 1e6 });
    try {
      // The large photo's pixels are decoded already, so its thread goes straight to the
      // refinement, JavaScript over 16 MP: in one thread, the small photo would wait for it.
      const side = 4000;
      const large: DecodedPixels = { image: { data: new Uint8Array(new SharedArrayBuffer(side * side * 4)).fill(200), width: side, height: side, channels: 4 }, opaque: true };
      const little = await sharp({ create: { width: 300, height: 300, channels: 3, background: { r: 200, g: 90, b: 40 } } }).png().toBuffer();
      const spec = { pngCompression: 'fast' as const, refine: DEFAULT_REFINE_SETTINGS };
      const modelInput: RawImage = { data: new Uint8Array(64 * 64 * 3).fill(120), width: 64, height: 64, channels: 3 };
      const soft = (): RawImage => ({ data: new Uint8Array(64 * 64).map((_, i) => (i % 64 < 32 ? 255 : 0)), width: 64, height: 64, channels: 1 });
      const order: string[] = [];
      const finish = (photo: PhotoInput, pixels: number, name: string) => {
        const finishing = lanes.begin(photo, { maxPixels: 50e6, spec, pixels });
        finishing.prepare(modelInput);
        return finishing.finish(soft()).then(() => order.push(name));
      };
      const big = finish(large, side * side, 'large');
      const small = finish(little, 300 * 300, 'small');
      await Promise.all([big, small]);
      expect(order).toEqual(['small', 'large']);
    } finally {
      await lanes.close();
    }
  });
});
