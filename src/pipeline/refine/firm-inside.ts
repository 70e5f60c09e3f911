import type { RawImage } from '../../image/raw-image.js';
import { boxMean } from './box-mean.js';

/**
 * The mask as 0..1 with the inside of the subject firmed up: IS-Net often leaves parts of
 * a subject at 0.8 or 0.9, which at full size shows as a faintly see-through subject. A
 * pixel on the foreground side of the outline (the mask's 128 level) is pushed towards 1 by
 * `w·(1 − p)`, where `w` grows with the model's confidence, `(p − 0.5) / 0.5`, and with the
 * distance from the outline, from 0 on it to 1 at `radius` grid pixels. Both grow smoothly,
 * so no new edge appears; near the outline the mask stays as it is for the guided filter to
 * place the edge, and the background side is left alone (pushing it to 0 cost more on the
 * eval's hair crops than it gained; docs/quality.md).
 *
 * @example const alpha = firmInside(mask, 3) // Float32Array, 0..1
 */
export function firmInside(mask: RawImage, radius: number): Float32Array {
  const { width, height, data } = mask;
  const n = width * height;
  const inside = new Float32Array(n);
  for (let i = 0; i < n; i++) inside[i] = data[i] >= 128 ? 1 : 0;
  // Share of the window on the foreground side: 0.5 on the outline, 1 from `radius` inside.
  const side = boxMean(inside, width, height, radius);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const p = data[i] * INVERSE_255;
    const s = side[i];
    out[i] = s > 0.5 && p > 0.5 ? p + Math.min(1, (s - 0.5) * 2) * (p - 0.5) * 2 * (1 - p) : p;
  }
  return out;
}

const INVERSE_255 = 1 / 255;
