import { describe, expect, it } from 'vitest';
import { toModelTensor } from '../../src/model/isnet-tensor.js';

describe('toModelTensor', () => {
  const image = { data: Uint8Array.from([0, 128, 255, 64, 192, 1]), width: 2, height: 1, channels: 3 as const };

  it('writes planar RGB normalised as (x − 128) / 256', () => {
    expect([...toModelTensor(image)]).toEqual([-0.5, -0.25, 0, 0.25, 0.49609375, -0.49609375]);
  });

  it('fills a buffer it is given, overwriting what was there', () => {
    const reused = new Float32Array(6).fill(7);
    expect(toModelTensor(image, reused)).toBe(reused);
    expect([...reused]).toEqual([-0.5, -0.25, 0, 0.25, 0.49609375, -0.49609375]);
    expect(() => toModelTensor(image, new Float32Array(5))).toThrow('expected 6');
  });
});
