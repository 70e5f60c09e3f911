import type { AnswerSpec, RegionOfInterest, RequestedFormat } from '../pipeline/answer-spec.js';
import type { Quality } from '../pipeline/views.js';

/** The answer as the options make it, but for its format, which the Accept header may still choose. */
export type AnswerOptions = Omit<AnswerSpec, 'format'>;

/**
 * What a removal asks for, once its options are read, whichever wire they came over: the
 * answer the finishing steps make (each option of the table writes its part of it), and what
 * else the removal takes from the request.
 */
export interface OutputOptions {
  /** As asked; absent lets the Accept header choose (`answer-negotiation.ts`), else PNG. */
  format?: RequestedFormat;
  /** The answer's spec, as the finishing steps read it, but for its format. */
  answer: AnswerOptions;
  /** The background image to fetch, for `bg_image_url`. */
  bgImageUrl?: string;
  roi?: RegionOfInterest;
  /** The request's own `refine`, if it made a choice; otherwise CUTOUT_REFINE decides. */
  refine?: boolean;
  /** The request's own `quality` (`views.ts`), if it made a choice; otherwise CUTOUT_QUALITY decides. */
  quality?: Quality;
  /** Which loaded model cuts (a CUTOUT_MODELS name); absent: the default. Checked against the loaded ones by the model service. */
  model?: string;
}

/** The options of a request that sent none: today's answer, a full-size transparent PNG. */
export const NO_OPTIONS: Readonly<OutputOptions> = Object.freeze({ answer: Object.freeze({ channels: 'rgba' as const }) });
