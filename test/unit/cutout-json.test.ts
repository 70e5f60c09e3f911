import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { cutoutJson } from '../../src/http/cutout-json.js';

describe('cutoutJson', () => {
  it('is exactly the JSON of the Base64 text, for sizes around every piece boundary', () => {
    const step = 3 * 16 * 1024;
    for (const size of [0, 1, 2, 3, 4, step - 1, step, step + 1, step + 2, 3 * step + 5, 1_000_003]) {
      const png = randomBytes(size);
      const body = cutoutJson(png);
      expect(body.toString('latin1')).toBe(JSON.stringify({ image_base64: png.toString('base64') }));
      expect(Buffer.from(JSON.parse(body.toString()).image_base64, 'base64').equals(png)).toBe(true);
    }
  });
});
