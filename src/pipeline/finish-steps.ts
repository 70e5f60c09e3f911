import { CutoutError } from '../errors.js';
import { VisibleBounds, type Box } from '../image/box.js';
import type { RawImage } from '../image/raw-image.js';
import { DEFAULT_ANSWER, type AnswerSpec } from './answer-spec.js';
import { decodeBackground, decodePhoto, type DecodedPhoto } from './decode.js';
import { encodeAnswer } from './encode.js';
import type { FinishedImage, FinishSpec } from './finish-protocol.js';
import { alphaChannel, cropBox, extractBox, placeInFrame } from './frame.js';
import { finishRefinement, type PreparedRefinement } from './refine/refine-cutout.js';
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

/** What `finish` brings besides the mask. */
export interface FinishInputs {
  /** The part of the photo the model saw (a region of interest), in the photo's full-size pixels; default all of it. */
  region?: Box;
  /** The background image's bytes, when the answer is composited onto one. */
  backgroundImage?: Uint8Array;
}

/**
 * Starts the photo's decode for {@link finishImage}: at full size, or, when the answer will be
 * scaled down and not cropped, already at the answer's size (every step after it then works
 * on that many pixels, not the photo's).
 */
export function beginPhoto(photo: Uint8Array, spec: FinishSpec, maxPixels: number): Promise<DecodedPhoto> {
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
 *    semi-transparent pixels) or stretched as it is (`stretch-alpha.ts`); it notes where the
 *    subject is, for the answer's foreground box;
 * 2. crop: the frame becomes the subject's box and its margin (else it is the whole photo);
 *    what lies outside the region the model saw is transparent;
 * 3. resize: scaled down to fit the largest size asked for;
 * 4. background: laid over a colour or an image (JPEG, which has no alpha: white unless
 *    another is asked for);
 * 5. channels: the alpha alone, for a mask;
 * 6. encode, in the format asked for.
 * The default answer runs only the first and the last.
 *
 * @example const { bytes, foreground } = await finishImage(job, mask, {})
 */
export async function finishImage(job: FinishJob, mask: RawImage, inputs: FinishInputs): Promise<FinishedImage> {
  const answer: AnswerSpec = job.spec.answer ?? DEFAULT_ANSWER;
  if (job.spec.refine && !job.prepared) throw new Error('a refined image was finished before it was prepared');
  const { image: photo, fullWidth, fullHeight } = await job.photo;
  const scale = photo.width / fullWidth;

  // 1. alpha, over the region the model saw (in the decoded photo's pixels)
  let start = performance.now();
  const region = inputs.region ? scaledBox(inputs.region, scale, photo) : { left: 0, top: 0, width: photo.width, height: photo.height };
  const subject = region.width === photo.width && region.height === photo.height ? photo : extractBox(photo, region);
  const visible = new VisibleBounds();
  if (job.prepared) finishRefinement(job.prepared, subject, mask, visible);
  else await stretchAlpha(subject, mask, visible);
  const seen = visible.box();
  const inPhoto = seen && { ...seen, left: seen.left + region.left, top: seen.top + region.top };
  const alpha = performance.now() - start;

  // 2. crop; 3. resize; 4. background; 5. channels
  start = performance.now();
  if (answer.crop && !inPhoto) throw new CutoutError('no_foreground', 'The model found no subject in this photo, so there is nothing to crop to.');
  const frame = answer.crop && inPhoto ? cropBox(inPhoto, answer.crop.margin) : { left: 0, top: 0, width: photo.width, height: photo.height };
  let cutout = placeInFrame(subject, region, frame);
  cutout = await fitInside(cutout, answer.maxWidth, answer.maxHeight);
  const background = await backgroundFor(answer, inputs, cutout, job.maxPixels);
  if (background) cutout = await overBackground(cutout, background);
  if (answer.channels === 'alpha') cutout = alphaChannel(cutout);
  const compose = performance.now() - start;

  start = performance.now();
  const bytes = await encodeAnswer(cutout, answer.format, job.spec.pngCompression);
  const encode = performance.now() - start;
  return {
    bytes,
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
      throw error instanceof CutoutError ? new CutoutError(error.code, `bg_image_url: ${error.message}`, { cause: error.cause }) : error;
    });
    return { image };
  }
  if (answer.format === 'jpeg' && answer.channels === 'rgba') return { colour: [255, 255, 255, 255] as const };
  return undefined;
}

/** A box of the full-size photo in the pixels of the photo as decoded (`scale` of full size), kept inside it. */
function scaledBox(box: Box, scale: number, photo: RawImage): Box {
  if (scale === 1) return box;
  const left = Math.min(photo.width - 1, Math.floor(box.left * scale));
  const top = Math.min(photo.height - 1, Math.floor(box.top * scale));
  const right = Math.max(left + 1, Math.min(photo.width, Math.ceil((box.left + box.width) * scale)));
  const bottom = Math.max(top + 1, Math.min(photo.height, Math.ceil((box.top + box.height) * scale)));
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
