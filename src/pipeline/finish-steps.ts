import { CutoutError } from '../errors.js';
import { VisibleBounds, type Box } from '../image/box.js';
import type { RawImage } from '../image/raw-image.js';
import { DEFAULT_ANSWER, type AnswerSpec, type Rgba } from './answer-spec.js';
import { decodeBackground, decodePhoto, type DecodedPhoto } from './decode.js';
import { encodeRequested } from './encode-requested.js';
import { castShadow } from './cast-shadow.js';
import type { FinishedImage, FinishSpec } from './finish-protocol.js';
import { alphaChannel, cropBox, extractBox, placeInFrame, visibleBox } from './frame.js';
import { finishRefinement, type PreparedRefinement } from './refine/refine-cutout.js';
import type { PhotoInput } from './photo-input.js';
import { placeSubject } from './place-subject.js';
import { fitInside, overBackground } from './resize-and-composite.js';
import { stretchAlpha } from './stretch-alpha.js';

/** One image on the finish thread, between its `begin` and its `finish`. */
export interface FinishJob {
  spec: FinishSpec;
  maxPixels: number;
  /** The photo, decoded as soon as the image is begun ({@link beginPhoto}). */
  photo: Promise<DecodedPhoto>;
  /** The refinement's grid work, once `prepare` has brought the model's input. */
  prepared?: PreparedRefinement;
  decodeMs: number;
}

/** What `finish` brings besides the mask, in the photo's full-size pixels. */
export interface FinishInputs {
  /** The part of the photo the mask covers, for a region of interest (`ResolvedRegion.view`); default all of it. */
  view?: Box;
  /** The region of interest: only what lies inside may be visible; default all of the view. */
  region?: Box;
  /** The background image (its bytes, or an HEIC's pixels), when the answer is composited onto one. */
  backgroundImage?: PhotoInput;
  /** The request field the background image came from, as its errors name it; default `bg_image_url`. */
  backgroundField?: string;
}

/**
 * Starts the photo's decode for {@link finishImage}: at full size, or, when the answer will be
 * scaled down and not cropped, already at the answer's size (every step after it then works
 * on that many pixels, not the photo's).
 */
export function beginPhoto(photo: PhotoInput, spec: FinishSpec, maxPixels: number): Promise<DecodedPhoto> {
  const answer = spec.answer ?? DEFAULT_ANSWER;
  const scaleFirst = !answer.crop && (answer.maxWidth !== undefined || answer.maxHeight !== undefined);
  return decodePhoto(photo, { maxPixels, fitInside: scaleFirst ? { width: answer.maxWidth, height: answer.maxHeight } : undefined });
}

/**
 * The finishing stage: turns the model's mask into the answer's bytes, over the photo's
 * pixels once, as a short sequence of steps on the finish thread. Each step takes the
 * cut-out the one before left (RGBA, in the frame of the answer so far):
 * 1. alpha: the mask made the alpha of the part of the photo the model saw, refined along
 *    the photo's own edges (`refine/`, which also cleans the old background's colour out of
 *    semi-transparent pixels) or stretched as it is (`stretch-alpha.ts`); only what lies in
 *    the region of interest is kept; it notes where the subject is, for the foreground box;
 * 2. crop: the frame becomes the subject's box and its margin (else it is the whole photo);
 *    what lies outside the region of interest is transparent;
 * 3. placement: the subject scaled and moved on the frame (`place-subject.ts`), when asked;
 *    then its outline, a stroke laid under it ({@link outlineSubject}), when asked;
 * 4. shadow: one cast from the subject's alpha laid under it (`cast-shadow.ts`), when asked;
 * 5. resize: scaled down to fit the largest size asked for (sides, and pixels in all);
 * 6. background: laid over a colour, an image, or the photo itself blurred (JPEG, which has
 *    no alpha: white unless another is asked for);
 * 7. channels: the alpha alone, for a mask;
 * 8. encode, in the format asked for (`auto` and `zip` decided in `encode-requested.ts`).
 * The default answer runs only the first and the last.
 *
 * @example const { bytes, foreground } = await finishImage(job, mask, {})
 */
export async function finishImage(job: FinishJob, mask: RawImage, inputs: FinishInputs): Promise<FinishedImage> {
  const answer: AnswerSpec = job.spec.answer ?? DEFAULT_ANSWER;
  if (job.spec.refine && !job.prepared) throw new Error('a refined image was finished before it was prepared');
  const { image: photo, fullWidth, fullHeight } = await job.photo;
  const scale = photo.width / fullWidth;
  // The alpha step writes into the photo's pixels, still opaque here: a background made of
  // the photo keeps a copy (new Uint8Array copies; a Buffer's slice() would be a view).
  const blur = answer.background && 'blur' in answer.background ? answer.background.blur : undefined;
  const original = blur !== undefined ? { ...photo, data: new Uint8Array(photo.data) } : undefined;

  // 1. alpha, over the part of the photo the model saw (in the decoded photo's pixels), and
  // only what lies in the region of interest kept
  let start = performance.now();
  const whole = { left: 0, top: 0, width: photo.width, height: photo.height };
  const view = inputs.view ? scaledBox(inputs.view, scale, whole) : whole;
  const seenAll = view.width === photo.width && view.height === photo.height;
  let subject = seenAll ? photo : extractBox(photo, view);
  const visible = new VisibleBounds();
  if (job.prepared) finishRefinement(job.prepared, subject, mask, visible);
  else await stretchAlpha(subject, mask, visible);
  let seen = visible.box();
  let at: Box = view;
  const region = inputs.region && scaledBox(inputs.region, scale, view);
  if (region && (region.width !== view.width || region.height !== view.height)) {
    subject = extractBox(subject, { ...region, left: region.left - view.left, top: region.top - view.top });
    seen = visibleBox(subject);
    at = region;
  }
  const inPhoto = seen && { ...seen, left: seen.left + at.left, top: seen.top + at.top };
  const alpha = performance.now() - start;

  // 2. crop; 3. placement; 4. shadow; 5. resize; 6. background; 7. channels
  start = performance.now();
  if (answer.crop && !inPhoto) throw new CutoutError('no_foreground', 'The model found no subject in this photo, so there is nothing to crop to.');
  const frame = answer.crop && inPhoto ? cropBox(inPhoto, answer.crop.margin) : { left: 0, top: 0, width: photo.width, height: photo.height };
  let cutout = placeInFrame(subject, at, frame);
  if (answer.placement) cutout = await placeSubject(cutout, answer.placement);
  if (answer.outline?.width) cutout = outlineSubject(cutout, answer.outline.width / resizeScale(cutout, answer), answer.outline.colour ?? WHITE);
  if (answer.shadow) cutout = await castShadow(cutout, answer.shadow);
  const cap = pixelCap(cutout, answer.maxPixels);
  cutout = await fitInside(cutout, smaller(answer.maxWidth, cap?.width), smaller(answer.maxHeight, cap?.height));
  const background = original && blur !== undefined ? { image: await blurredPhoto(original, frame, cutout, blur, job.maxPixels) } : await backgroundFor(answer, inputs, cutout, job.maxPixels);
  if (background) cutout = await overBackground(cutout, background);
  if (answer.channels === 'alpha') cutout = alphaChannel(cutout);
  const compose = performance.now() - start;

  start = performance.now();
  const { bytes, format } = await encodeRequested(cutout, answer.format, job.spec.pngCompression);
  const encode = performance.now() - start;
  return {
    bytes,
    format,
    width: cutout.width,
    height: cutout.height,
    input: { width: fullWidth, height: fullHeight },
    foreground: inPhoto && inputPixels(inPhoto, scale, fullWidth, fullHeight),
    timings: { decode: job.decodeMs, alpha, compose, encode },
  };
}

/** What the cut-out is laid over, if anything: the colour or image asked for, or white under a JPEG. */
async function backgroundFor(answer: AnswerSpec, inputs: FinishInputs, cutout: RawImage, maxPixels: number) {
  if (answer.background && 'colour' in answer.background) return { colour: answer.background.colour };
  if (answer.background) {
    if (!inputs.backgroundImage) throw new Error('the answer has a background image, but none came with finish');
    const image = await decodeBackground(inputs.backgroundImage, { maxPixels, width: cutout.width, height: cutout.height }).catch((error: unknown) => {
      throw error instanceof CutoutError ? new CutoutError(error.code, `${inputs.backgroundField ?? 'bg_image_url'}: ${error.message}`, { cause: error.cause }) : error;
    });
    return { image };
  }
  if (answer.format === 'jpeg' && answer.channels === 'rgba') return { colour: [255, 255, 255, 255] as const };
  return undefined;
}

/**
 * The photo's own pixels under the answer's frame, softened by a blur of `radius` pixels of
 * the answer: shrunk to about one pixel per radius, then scaled back up to the answer's size,
 * whose resampling smooths what the shrink kept (a wide blur for the cost of two resizes).
 */
async function blurredPhoto(original: RawImage, frame: Box, cutout: RawImage, radius: number, maxPixels: number): Promise<RawImage> {
  const left = Math.max(0, frame.left);
  const top = Math.max(0, frame.top);
  const inside = { left, top, width: Math.min(original.width, frame.left + frame.width) - left, height: Math.min(original.height, frame.top + frame.height) - top };
  const part = extractBox(original, inside);
  const perAnswerPixel = frame.width / cutout.width;
  const step = Math.max(1, radius * perAnswerPixel);
  const small = await fitInside(part, Math.max(1, Math.round(part.width / step)), Math.max(1, Math.round(part.height / step)));
  return decodeBackground({ image: { ...small, channels: 4 }, opaque: true }, { maxPixels, width: cutout.width, height: cutout.height });
}

const WHITE = [255, 255, 255, 255] as const;
/** Where the alpha counts as the subject's, for the outline's distance. */
const SUBJECT_ALPHA = 128;

/**
 * The cut-out with a stroke of `width` pixels in `colour` around the subject, laid under it
 * (the sticker look): each pixel within `width` of the subject (alpha ≥ 128) is the colour,
 * the stroke's edge anti-aliased over one pixel, and the cut-out composited over it, so its
 * soft edges blend into the stroke. The frame keeps its size: a stroke past it is cut, as a
 * shadow is (a crop's margin keeps it whole). The distance is exact (Felzenszwalb and
 * Huttenlocher's squared-distance transform, by rows then columns), over the subject's box
 * widened by the stroke only.
 *
 * @example outlineSubject(cutout, 12, [255, 255, 255, 255])
 */
export function outlineSubject(cutout: RawImage, width: number, colour: Rgba): RawImage {
  const box = visibleBox(cutout);
  if (!box || cutout.channels !== 4) return cutout;
  const reach = Math.ceil(width) + 1;
  const left = Math.max(0, box.left - reach);
  const top = Math.max(0, box.top - reach);
  const w = Math.min(cutout.width, box.left + box.width + reach) - left;
  const h = Math.min(cutout.height, box.top + box.height + reach) - top;
  const FAR = 1e20;
  const distance = new Float32Array(w * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) distance[y * w + x] = cutout.data[((top + y) * cutout.width + left + x) * 4 + 3] >= SUBJECT_ALPHA ? 0 : FAR;
  }
  squaredDistances(distance, w, h);
  const data = new Uint8Array(cutout.data);
  const [r, g, b, a] = colour;
  // Past this squared distance the stroke is 0; an opaque pixel stays as it is under any stroke.
  const beyond = (width + 0.5) * (width + 0.5);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const squared = distance[y * w + x];
      if (squared >= beyond) continue;
      const at = ((top + y) * cutout.width + left + x) * 4;
      if (data[at + 3] === 255) continue;
      const stroke = (Math.min(1, Math.max(0, width + 0.5 - Math.sqrt(squared))) * a) / 255;
      if (stroke === 0) continue;
      // The cut-out over the stroke ("over", straight alpha).
      const over = data[at + 3] / 255;
      const alpha = over + stroke * (1 - over);
      const mix = (c: number, strokeC: number) => Math.round((c * over + strokeC * stroke * (1 - over)) / alpha);
      data[at] = mix(data[at], r);
      data[at + 1] = mix(data[at + 1], g);
      data[at + 2] = mix(data[at + 2], b);
      data[at + 3] = Math.round(alpha * 255);
    }
  }
  return { ...cutout, data };
}

/** Turns 0 (the subject) / far into each pixel's squared distance to the subject, in place: rows, then columns. */
function squaredDistances(grid: Float32Array, width: number, height: number): void {
  const n = Math.max(width, height);
  const line = new Float32Array(n);
  const out = new Float32Array(n);
  const parabolas = new Int32Array(n);
  const bounds = new Float32Array(n + 1);
  for (let y = 0; y < height; y++) {
    const row = grid.subarray(y * width, (y + 1) * width);
    line.set(row);
    lowerEnvelope(line, width, out, parabolas, bounds);
    row.set(out.subarray(0, width));
  }
  for (let x = 0; x < width; x++) {
    for (let y = 0, at = x; y < height; y++, at += width) line[y] = grid[at];
    lowerEnvelope(line, height, out, parabolas, bounds);
    for (let y = 0, at = x; y < height; y++, at += width) grid[at] = out[y];
  }
}

/** One line's squared distances: the lower envelope of the parabolas rooted at each sample (Felzenszwalb and Huttenlocher, 2012). */
function lowerEnvelope(f: Float32Array, n: number, d: Float32Array, v: Int32Array, z: Float32Array): void {
  let k = 0;
  v[0] = 0;
  z[0] = -Infinity;
  z[1] = Infinity;
  const meet = (q: number, p: number) => (f[q] + q * q - (f[p] + p * p)) / (2 * q - 2 * p);
  for (let q = 1; q < n; q++) {
    let s = meet(q, v[k]);
    while (s <= z[k]) s = meet(q, v[--k]);
    v[++k] = q;
    z[k] = s;
    z[k + 1] = Infinity;
  }
  k = 0;
  for (let q = 0; q < n; q++) {
    while (z[k + 1] < q) k++;
    d[q] = (q - v[k]) * (q - v[k]) + f[v[k]];
  }
}

/** How much the resize step will scale `image` (1 when it does not): the outline's width is in the answer's pixels. */
function resizeScale(image: RawImage, answer: AnswerSpec): number {
  const cap = pixelCap(image, answer.maxPixels);
  const maxWidth = smaller(answer.maxWidth, cap?.width) ?? image.width;
  const maxHeight = smaller(answer.maxHeight, cap?.height) ?? image.height;
  return Math.min(1, maxWidth / image.width, maxHeight / image.height);
}

/** The largest size inside `image`'s aspect ratio with at most `maxPixels` pixels; undefined when it has no more already. */
function pixelCap(image: RawImage, maxPixels: number | undefined): { width: number; height: number } | undefined {
  if (maxPixels === undefined || image.width * image.height <= maxPixels) return undefined;
  const k = Math.sqrt(maxPixels / (image.width * image.height));
  return { width: Math.max(1, Math.floor(image.width * k)), height: Math.max(1, Math.floor(image.height * k)) };
}

const smaller = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));

/** A box of the full-size photo in the pixels of the photo as decoded (`scale` of full size), kept inside `within`. */
function scaledBox(box: Box, scale: number, within: Box): Box {
  const left = Math.min(within.left + within.width - 1, Math.max(within.left, Math.floor(box.left * scale)));
  const top = Math.min(within.top + within.height - 1, Math.max(within.top, Math.floor(box.top * scale)));
  const right = Math.max(left + 1, Math.min(within.left + within.width, Math.ceil((box.left + box.width) * scale)));
  const bottom = Math.max(top + 1, Math.min(within.top + within.height, Math.ceil((box.top + box.height) * scale)));
  return { left, top, width: right - left, height: bottom - top };
}

/** A box of the decoded photo in the input's own pixels: the smallest that holds it. */
function inputPixels(box: Box, scale: number, fullWidth: number, fullHeight: number): Box {
  if (scale === 1) return box;
  const left = Math.max(0, Math.floor(box.left / scale));
  const top = Math.max(0, Math.floor(box.top / scale));
  const right = Math.min(fullWidth, Math.ceil((box.left + box.width) / scale));
  const bottom = Math.min(fullHeight, Math.ceil((box.top + box.height) / scale));
  return { left, top, width: right - left, height: bottom - top };
}
