/**
 * What an answer should be, as the finishing steps read it (`finish-steps.ts`): the request's
 * output options once parsed and checked (`src/options/output-options.ts` makes them from the
 * API's fields). The default answer is `{ format: 'png', channels: 'rgba' }`.
 */

/** The answer's encoding. */
export type AnswerFormat = 'png' | 'webp' | 'jpeg';

/**
 * An encoding as a request may name it: one of {@link AnswerFormat}, or `auto` (PNG when the
 * result has transparency, else JPEG), or `zip` (remove.bg's archive: `color.jpg` with the
 * colours and `alpha.png` with the mask).
 */
export type RequestedFormat = AnswerFormat | 'auto' | 'zip';

/** What an answer was encoded as: an image format, or the zip archive. */
export type EncodedFormat = AnswerFormat | 'zip';

/** A colour as 0..255 red, green, blue and alpha. */
export type Rgba = readonly [number, number, number, number];

/** A length in pixels, or in percent of something the option names. */
export interface Length {
  value: number;
  unit: 'px' | '%';
}

/** A length for each side: top and bottom in percent of a height, left and right of a width. */
export interface SideLengths {
  top: Length;
  right: Length;
  bottom: Length;
  left: Length;
}

/** A region of the photo as its two corners, each coordinate in pixels or percent of the photo's side. */
export interface RegionOfInterest {
  x1: Length;
  y1: Length;
  x2: Length;
  y2: Length;
}

export interface AnswerSpec {
  format: RequestedFormat;
  /** `alpha`: the mask alone, one 8-bit channel. */
  channels: 'rgba' | 'alpha';
  /**
   * Composite the cut-out onto a colour, onto the image that comes with `finish`, or onto the
   * photo itself blurred by `blur` pixels of the answer.
   */
  background?: { colour: Rgba } | { image: true } | { blur: number };
  /** Crop to the subject's box, with this margin around it (percent of the box). */
  crop?: { margin: Length | SideLengths };
  /** Scale down (never up) to fit inside these, after cropping. */
  maxWidth?: number;
  maxHeight?: number;
  /** Scale down (never up) to at most this many pixels, after cropping (remove.bg's `size`). */
  maxPixels?: number;
  /**
   * Lay the subject on a canvas of the answer's size, scaled so that it fills at most
   * `scale` of the canvas's width and height (0 < scale ≤ 1; absent: its own size), at
   * `position` (fractions of the free room, 0 = left/top, 0.5 = centred; absent: where it was).
   */
  placement?: { scale?: number; position?: { x: number; y: number } };
  /** A shadow under the subject, made from its alpha, at this opacity (0–1). */
  shadow?: { opacity: number; kind: 'drop' | 'car' | '3D' };
  /**
   * A stroke around the subject, the sticker look: `width` pixels of the answer wide (none
   * without it), in `colour` (default opaque white), laid under the cut-out.
   */
  outline?: { width?: number; colour?: Rgba };
}

/** The answer every request gets unless it asks for another. */
export const DEFAULT_ANSWER: Readonly<AnswerSpec> = Object.freeze({ format: 'png', channels: 'rgba' });

/** The Content-Type of each format. */
export const CONTENT_TYPES: Readonly<Record<AnswerFormat, string>> = Object.freeze({ png: 'image/png', webp: 'image/webp', jpeg: 'image/jpeg' });

/** The Content-Type of each encoding, the zip archive's included. */
export const ENCODED_TYPES: Readonly<Record<EncodedFormat, string>> = Object.freeze({ ...CONTENT_TYPES, zip: 'application/zip' });
