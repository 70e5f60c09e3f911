import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { cutoutJson } from '../../src/pipeline/cutout-json.js';

describe('cutoutJson', () => {
  it('is exactly the JSON of the Base64 text, for sizes on either side of an external string', () => {
    // Node makes a Base64 text over 1 031 913 characters an external string: from 773 935 bytes.
    for (const size of [0, 1, 2, 3, 4, 49_151, 49_152, 49_153, 773_933, 773_934, 773_935, 1_000_003]) {
      const png = randomBytes(size);
      const body = cutoutJson(png);
      expect(body.toString('latin1')).toBe(JSON.stringify({ image_base64: png.toString('base64') }));
      expect(Buffer.from(JSON.parse(body.toString()).image_base64, 'base64').equals(png)).toBe(true);
    }
  });
});
