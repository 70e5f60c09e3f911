import type { AnswerSpec, RegionOfInterest, RequestedFormat, SideLengths } from '../pipeline/answer-spec.js';
import type { Quality } from '../pipeline/views.js';

/** What a removal asks for, once its options are read, whichever wire they came over. */
export interface OutputOptions {
  /** As asked; absent lets the Accept header choose (`answer-negotiation.ts`), else PNG. */
  format?: RequestedFormat;
  channels: 'rgba' | 'alpha';
  /** What the answer is laid over (`bg_color`, `bg_image_url`), if anything. */
  background?: AnswerSpec['background'];
  /** The background image to fetch, for `bg_image_url`. */
  bgImageUrl?: string;
  crop: boolean;
  cropMargin?: SideLengths;
  maxWidth?: number;
  maxHeight?: number;
  roi?: RegionOfInterest;
  /** The request's own `refine`, if it made a choice; otherwise CUTOUT_REFINE decides. */
  refine?: boolean;
  /** The request's own `quality` (`views.ts`), if it made a choice; otherwise CUTOUT_QUALITY decides. */
  quality?: Quality;
  /** `size`: at most this many pixels (remove.bg's sizes); absent: no cap. */
  maxPixels?: number;
  /** `scale` and `position`: the subject placed on the canvas. */
  placement?: AnswerSpec['placement'];
  /** `add_shadow`, `shadow_type`, `shadow_opacity`. */
  shadow?: AnswerSpec['shadow'];
  /** Which loaded model cuts (a CUTOUT_MODELS name); absent: the default. Checked against the loaded ones by the model service. */
  model?: string;
}

/** The options of a request that sent none: today's answer, a full-size transparent PNG. */
export const NO_OPTIONS: Readonly<OutputOptions> = Object.freeze({ channels: 'rgba', crop: false });
