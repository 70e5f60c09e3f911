import { CutoutError } from '../errors.js';

/**
 * What was wrong with an option's value, in the words remove.bg's API uses for it (its error
 * code), so that the remove.bg-compatible routes can answer with that code.
 */
export type OptionProblem =
  | 'invalid_request'
  | 'missing_source'
  | 'multiple_sources'
  | 'multiple_bg_sources'
  | 'invalid_size'
  | 'invalid_format'
  | 'invalid_channels'
  | 'invalid_roi'
  | 'roi_region_empty'
  | 'invalid_crop_margin'
  | 'invalid_scale'
  | 'invalid_position'
  | 'invalid_bg_color'
  | 'invalid_shadow'
  | 'failed_image_download'
  | 'failed_bg_download'
  | 'failed_to_read_image';

/**
 * A bad option value: a 400 `invalid_request` whose detail says what the field takes (so the
 * native API answers it as any other), which also names the problem as remove.bg does.
 *
 * @example throw new OptionValueError('invalid_scale', 'scale must be "original" or 10% to 100%, not "5%".')
 */
export class OptionValueError extends CutoutError {
  readonly problem: OptionProblem;

  constructor(problem: OptionProblem, detail: string, options?: { cause?: unknown }) {
    super('invalid_request', detail, options);
    this.name = 'OptionValueError';
    this.problem = problem;
  }
}
