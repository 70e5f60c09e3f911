import { SUBJECT_ALPHA, VisibleBounds, type Box } from '../image/box.js';
import type { RawImage } from '../image/raw-image.js';
import type { Length, SideLengths } from './answer-spec.js';

/**
 * The crop around a subject's box: the box grown by `margin` on every side, in pixels or in
 * percent of the box's own width (left and right) and height (top and bottom). It may reach
 * past the photo's edges; {@link placeInFrame} fills that part transparent. `margin` may
 * also give each side its own length.
 *
 * @example cropBox({ left: 100, top: 50, width: 200, height: 100 }, { value: 10, unit: '%' }) // { left: 80, top: 40, width: 240, height: 120 }
 */
export function cropBox(subject: Box, margin: Length | SideLengths): Box {
  const sides = 'value' in margin ? { top: margin, right: margin, bottom: margin, left: margin } : margin;
  const px = (length: Length, side: number) => (length.unit === '%' ? Math.round((length.value / 100) * side) : length.value);
  const top = px(sides.top, subject.height);
  const bottom = px(sides.bottom, subject.height);
  const left = px(sides.left, subject.width);
  const right = px(sides.right, subject.width);
  return { left: subject.left - left, top: subject.top - top, width: subject.width + left + right, height: subject.height + top + bottom };
}

/**
 * The frame of the answer, `frame` in the photo's pixels, filled from `image`, which stands
 * at `at` in the same pixels; what the image does not cover is transparent black. The image
 * itself comes back when it is the frame already.
 */
export function placeInFrame(image: RawImage, at: { left: number; top: number }, frame: Box): RawImage {
  if (at.left === frame.left && at.top === frame.top && image.width === frame.width && image.height === frame.height) return image;
  const { channels } = image;
  const data = new Uint8Array(frame.width * frame.height * channels);
  const fromX = Math.max(frame.left, at.left);
  const toX = Math.min(frame.left + frame.width, at.left + image.width);
  const fromY = Math.max(frame.top, at.top);
  const toY = Math.min(frame.top + frame.height, at.top + image.height);
  for (let y = fromY; y < toY; y++) {
    const source = ((y - at.top) * image.width + (fromX - at.left)) * channels;
    const target = ((y - frame.top) * frame.width + (fromX - frame.left)) * channels;
    if (toX > fromX) data.set(image.data.subarray(source, source + (toX - fromX) * channels), target);
  }
  return { data, width: frame.width, height: frame.height, channels };
}

/** A copy of the part of `image` inside `box`, which must lie within it. */
export function extractBox(image: RawImage, box: Box): RawImage {
  return placeInFrame(image, { left: 0, top: 0 }, box);
}

/** The alpha channel of an RGBA image, as a one-channel image. */
export function alphaChannel(image: RawImage): RawImage {
  if (image.channels !== 4) throw new Error(`alphaChannel needs RGBA, got ${image.channels} channels`);
  const data = new Uint8Array(image.width * image.height);
  for (let p = 0, j = 3; p < data.length; p++, j += 4) data[p] = image.data[j];
  return { data, width: image.width, height: image.height, channels: 1 };
}

/** The box of the RGBA image's visible pixels (alpha at least SUBJECT_ALPHA), by a scan of its alpha; undefined when none is. */
export function visibleBox(image: RawImage): Box | undefined {
  const bounds = new VisibleBounds();
  const { data, width, height } = image;
  for (let y = 0; y < height; y++) {
    const row = 4 * y * width;
    let first = 0;
    while (first < width && data[row + 4 * first + 3] < SUBJECT_ALPHA) first++;
    if (first === width) continue;
    let last = width - 1;
    while (data[row + 4 * last + 3] < SUBJECT_ALPHA) last--;
    bounds.addRun(y, first, last + 1);
  }
  return bounds.box();
}
