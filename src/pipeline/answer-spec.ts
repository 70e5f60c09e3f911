/**
 * What an answer should be, as the finishing steps read it (`finish-steps.ts`): the request's
 * output options once parsed and checked (`src/removal/output-options.ts` makes them from the
 * API's fields). The default answer is `{ format: 'png', channels: 'rgba' }`.
 */

/** The answer's encoding. */
export type AnswerFormat = 'png' | 'webp' | 'jpeg';

/** A colour as 0..255 red, green, blue and alpha. */
export type Rgba = readonly [number, number, number, number];

/** A length in pixels, or in percent of something the option names. */
export interface Length {
  value: number;
  unit: 'px' | '%';
}

/** A region of the photo as its two corners, each coordinate in pixels or percent of the photo's side. */
export interface RegionOfInterest {
  x1: Length;
  y1: Length;
  x2: Length;
  y2: Length;
}

export interface AnswerSpec {
  format: AnswerFormat;
  /** `alpha`: the mask alone, one 8-bit channel. */
  channels: 'rgba' | 'alpha';
  /** Composite the cut-out onto a colour, or onto the image that comes with `finish`. */
  background?: { colour: Rgba } | { image: true };
  /** Crop to the subject's box, with this margin around it (percent of the box). */
  crop?: { margin: Length };
  /** Scale down (never up) to fit inside these, after cropping. */
  maxWidth?: number;
  maxHeight?: number;
}

/** The answer every request gets unless it asks for another. */
export const DEFAULT_ANSWER: Readonly<AnswerSpec> = Object.freeze({ format: 'png', channels: 'rgba' });

/** The Content-Type of each format. */
export const CONTENT_TYPES: Readonly<Record<AnswerFormat, string>> = Object.freeze({ png: 'image/png', webp: 'image/webp', jpeg: 'image/jpeg' });
