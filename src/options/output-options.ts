import type { AnswerSpec, RegionOfInterest, RequestedFormat, Rgba, SideLengths } from '../pipeline/answer-spec.js';
import type { Quality } from '../pipeline/views.js';
import { OptionValueError } from './option-value-error.js';
import { OPTIONS, optionsOf, wireUse, type OptionName, type OptionValue, type Wire } from './option-table.js';

/** What a removal asks for, once its options are read, whichever wire they came over. */
export interface OutputOptions {
  /** As asked; absent lets the Accept header choose (`answer-negotiation.ts`), else PNG. */
  format?: RequestedFormat;
  channels: 'rgba' | 'alpha';
  bgColor?: Rgba;
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

/** Unset, as clients mean it: absent, JSON null, or an empty (or blank) string. */
export const isSet = (value: unknown): boolean => value !== undefined && value !== null && !(typeof value === 'string' && value.trim() === '');

/** Besides the fields: whether the request brought a background image as a file (remove.bg's `bg_image_file`). */
export interface ReadContext {
  backgroundFile?: boolean;
}

/**
 * Reads the options `wire` takes from a request's fields (JSON values or form text alike),
 * each with its kind's one reader (`option-table.ts`), then the rules between them: one
 * background at most, none with `channels=alpha`, a `scale` without a `position` centred,
 * a shadow only with `add_shadow`. A field the wire does not take is ignored; a bad value
 * throws an OptionValueError naming the field and what it takes.
 *
 * @example readOptions({ format: 'jpg', bg_color: 'red', crop: '1' }, 'native')
 */
export function readOptions(fields: Readonly<Record<string, unknown>>, wire: Wire, context: ReadContext = {}): OutputOptions {
  const values: { [N in OptionName]?: OptionValue<N> } = {};
  for (const name of optionsOf(wire)) {
    const use = wireUse(name, wire)!;
    const sent = isSet(fields[name]) ? fields[name] : use.default;
    if (sent === undefined) continue;
    if (use.only && !use.only.includes(String(sent).trim().toLowerCase())) {
      // The kind's own message for a word this wire does not list.
      throw new OptionValueError(OPTIONS[name].kind.problem, `${name} must be ${use.only.join(', ')} here, not ${JSON.stringify(sent).slice(0, 60)}.`);
    }
    (values as Record<string, unknown>)[name] = OPTIONS[name].kind.read(name, sent);
  }
  const set = (name: OptionName) => Object.hasOwn(values, name);

  const backgrounds = [context.backgroundFile && 'bg_image_file', set('bg_image_url') && 'bg_image_url', set('bg_color') && 'bg_color'].filter(Boolean);
  if (backgrounds.length > 1) throw new OptionValueError('multiple_bg_sources', `Send at most one of bg_color, bg_image_url and bg_image_file, not ${backgrounds.join(' and ')}.`);
  if (values.channels === 'alpha' && backgrounds.length > 0) {
    throw new OptionValueError('invalid_channels', `channels=alpha answers the mask alone, which has no background: leave out ${backgrounds[0]}, or ask for rgba.`);
  }

  const options: OutputOptions = { ...NO_OPTIONS };
  if (values.format !== undefined) options.format = values.format;
  if (values.channels !== undefined) options.channels = values.channels;
  if (values.bg_color !== undefined) options.bgColor = values.bg_color;
  if (values.bg_image_url !== undefined) options.bgImageUrl = values.bg_image_url;
  if (values.crop !== undefined) options.crop = values.crop;
  if (values.crop_margin !== undefined) options.cropMargin = values.crop_margin;
  if (values.max_width !== undefined) options.maxWidth = values.max_width;
  if (values.max_height !== undefined) options.maxHeight = values.max_height;
  if (values.roi !== undefined) options.roi = values.roi;
  if (values.refine !== undefined) options.refine = values.refine;
  if (values.quality !== undefined) options.quality = values.quality;
  if (set('size') && values.size !== undefined) options.maxPixels = values.size;
  // As on remove.bg, a scale without a position centres the subject.
  const scale = values.scale;
  const position = set('position') ? values.position : scale !== undefined ? { x: 0.5, y: 0.5 } : undefined;
  if (scale !== undefined || position) options.placement = { scale, position };
  if (values.add_shadow) options.shadow = { kind: values.shadow_type ?? 'drop', opacity: values.shadow_opacity ?? 0.5 };
  if (values.model !== undefined) options.model = values.model;
  return options;
}

/**
 * The answer the finishing steps make for these options, in `format` (the options' own, or
 * the one the Accept header chose).
 */
export function answerSpec(options: OutputOptions, format: RequestedFormat): AnswerSpec {
  const margin = options.cropMargin ?? { value: 0, unit: 'px' as const };
  return {
    format,
    channels: options.channels,
    background: options.bgColor ? { colour: options.bgColor } : options.bgImageUrl ? { image: true } : undefined,
    crop: options.crop ? { margin } : undefined,
    maxWidth: options.maxWidth,
    maxHeight: options.maxHeight,
    ...(options.maxPixels !== undefined && { maxPixels: options.maxPixels }),
    ...(options.placement && { placement: options.placement }),
    ...(options.shadow && { shadow: options.shadow }),
  };
}
