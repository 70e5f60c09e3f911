import { MODEL_NAME } from '../model/model-presets.js';
import type { RequestedFormat } from '../pipeline/answer-spec.js';
import type { Quality } from '../pipeline/views.js';
import type { OutputOptions } from './output-options.js';
import { boolean, choice, colour, percent, place, region, share, sideLengths, wholeNumber, word, type ValueKind } from './value-kinds.js';

/**
 * The wires an option can come over: the native API (its three endpoints, try-it, the SDK and
 * the CLI), remove.bg's `POST /v1.0/removebg` and Photoroom's `POST /v1/segment`.
 */
export type Wire = 'native' | 'removebg' | 'photoroom';

/** How one wire takes an option: absent, it does not (the field is ignored, as unknown fields are). */
export interface WireUse {
  /** The value the wire reads when the request sends none (remove.bg's `size=preview`). */
  default?: string;
  /** The only words this wire takes, where its own documentation lists fewer (Photoroom's sizes). */
  only?: readonly string[];
}

/** One option, declared once: every reader, schema, flag, type and table comes from here. */
export interface OptionDeclaration<T> {
  kind: ValueKind<T>;
  /** Where its value goes in the removal's options; absent: it has no effect of its own (or one of the rules between options gives it one, `read-options.ts`). */
  apply?: (value: T, into: OutputOptions) => void;
  /** What the answer is laid over: at most one such option a request (with remove.bg's `bg_image_file`), and none with `channels=alpha`. */
  background?: true;
  /** What it does, for the OpenAPI document and the SDK's doc comment. */
  description: string;
  wires: Partial<Record<Wire, WireUse>>;
  /** The CLI's flag, when it is not the name in kebab-case. */
  flag?: string;
  example?: string;
}

const declare = <T>(declaration: OptionDeclaration<T>) => declaration;
const EVERY_WIRE = { native: {}, removebg: {}, photoroom: {} } as const;
const NATIVE_AND_REMOVEBG = { native: {}, removebg: {} } as const;
const NATIVE = { native: {} } as const;
const REMOVEBG = { removebg: {} } as const;

/** remove.bg's sizes as a cap in pixels; absent (undefined): the photo's own size. */
const SIZES: Record<string, number | undefined> = {
  preview: 250_000,
  small: 250_000,
  regular: 250_000,
  medium: 1_500_000,
  hd: 4_000_000,
  full: undefined,
  '4k': undefined,
  auto: undefined,
  '50MP': undefined,
};
const FORMATS: Record<string, RequestedFormat> = { auto: 'auto', png: 'png', jpg: 'jpeg', jpeg: 'jpeg', webp: 'webp', zip: 'zip' };
const QUALITIES: Record<Quality, Quality> = { fast: 'fast', best: 'best', auto: 'auto' };
/** remove.bg's largest crop margin, which both wires keep. */
const MAX_MARGIN_PX = 500;
const MAX_MARGIN_PERCENT = 50;
const MAX_SIDE = 65_535;

/**
 * Every option a removal takes, on every wire, under remove.bg's name wherever remove.bg has
 * one. The order is the order of the docs' table and of the CLI's help.
 *
 * A new option goes here (and its effect in the finishing steps); the native JSON and form
 * reading, remove.bg's and Photoroom's reading, the request schema of the OpenAPI document,
 * the CLI's flags, try-it's "More options", the SDK's option type (`npx tsx
 * scripts/client-options.ts`) and the upload's field limit all follow from this table.
 */
export const OPTIONS = {
  format: declare({
    kind: choice(FORMATS, 'invalid_format'),
    apply: (format, into) => { into.format = format; },
    description:
      "The result's encoding: png, webp, or jpg/jpeg (flattened onto bg_color, white when none is given); auto: PNG when the result has transparency, else JPEG; zip: an archive of color.jpg and alpha.png (remove.bg's). Native default: the type the Accept header prefers, else png; wins over Accept.",
    wires: { native: {}, removebg: { default: 'auto' }, photoroom: { default: 'png', only: ['png', 'jpg', 'jpeg', 'webp'] } },
    example: 'webp',
  }),
  channels: declare({
    kind: choice({ rgba: 'rgba', alpha: 'alpha' } as const, 'invalid_channels'),
    apply: (channels, into) => { into.channels = channels; },
    description: 'rgba (default): the cut-out. alpha: the mask alone, an 8-bit greyscale image (white = subject), exactly the alpha of the rgba answer.',
    wires: EVERY_WIRE,
  }),
  bg_color: declare({
    kind: colour(),
    apply: (colour, into) => { into.background = { colour }; },
    background: true,
    description: "Composite the cut-out onto this colour: hex rgb, rgba, rrggbb or rrggbbaa (# optional), or a CSS colour name. Soft edges blend with the subject's cleaned colours.",
    wires: EVERY_WIRE,
    example: '#ffffff',
  }),
  bg_image_url: declare({
    kind: word(/^[\s\S]+$/, 8192, 'an http(s) URL of at most 8192 characters', 'failed_bg_download'),
    apply: (url, into) => {
      into.bgImageUrl = url;
      into.background = { image: true };
    },
    background: true,
    description: 'Composite the cut-out onto this image (http(s) URL, fetched with the same guards and limits as image_url), scaled to cover the result.',
    wires: NATIVE_AND_REMOVEBG,
  }),
  bg_blur: declare({
    kind: wholeNumber(1, 500, 'pixels'),
    apply: (radius, into) => { into.background = { blur: radius }; },
    background: true,
    description:
      "Lay the cut-out over the photo's own background, blurred by this radius in the answer's pixels: the subject sharp, the scene softened behind it, as a portrait camera does. Not with another background or channels=alpha.",
    wires: NATIVE,
    example: '12',
  }),
  crop: declare({
    kind: boolean(),
    apply: (crop, into) => { into.crop = crop; },
    description: "Crop the result to the subject's box (default false). A photo with no subject is then 422 no_foreground.",
    wires: EVERY_WIRE,
  }),
  crop_margin: declare({
    kind: sideLengths(MAX_MARGIN_PX, MAX_MARGIN_PERCENT, 'invalid_crop_margin', 'of the subject'),
    apply: (margin, into) => { into.cropMargin = margin; },
    description: `Margin around the cropped subject (default 0): one, two or four lengths (all sides; top/bottom and left/right; top, right, bottom, left), each whole pixels up to ${MAX_MARGIN_PX} or a percent of the subject's box up to ${MAX_MARGIN_PERCENT}%.`,
    wires: NATIVE_AND_REMOVEBG,
    example: '10%',
  }),
  max_width: declare({
    kind: wholeNumber(1, MAX_SIDE, 'pixels'),
    apply: (width, into) => { into.maxWidth = width; },
    description: 'Scale the result down (never up) to fit inside this width, after cropping; the aspect ratio is kept.',
    wires: NATIVE,
  }),
  max_height: declare({
    kind: wholeNumber(1, MAX_SIDE, 'pixels'),
    apply: (height, into) => { into.maxHeight = height; },
    description: 'Scale the result down (never up) to fit inside this height, after cropping.',
    wires: NATIVE,
  }),
  roi: declare({
    kind: region(),
    apply: (roi, into) => { into.roi = roi; },
    description: 'Region of interest, "x1 y1 x2 y2" in pixels or percent of the photo: only what lies inside can be foreground, and the model sees this region (default: the whole photo).',
    wires: NATIVE_AND_REMOVEBG,
    example: '10% 5% 90% 100%',
  }),
  refine: declare({
    kind: boolean(),
    apply: (refine, into) => { into.refine = refine; },
    description: "Refine the edges and their colours (default: the server's CUTOUT_REFINE, normally true); false returns the model's mask stretched as it is.",
    wires: NATIVE,
  }),
  quality: declare({
    kind: choice(QUALITIES),
    apply: (quality, into) => { into.quality = quality; },
    description:
      "fast: one look, the model's single guess; best: the model looks at the photo and at its mirror image, and the two masks are fused (about twice the model's time); auto: the mirror look only where the first is doubtful (default: the server's CUTOUT_QUALITY, normally auto). X-Looks says how many looks were taken.",
    wires: NATIVE,
  }),
  size: declare({
    kind: choice(SIZES, 'invalid_size'),
    apply: (maxPixels, into) => {
      if (maxPixels !== undefined) into.maxPixels = maxPixels;
    },
    description: "At most this many pixels, scaled down after cropping: preview, small, regular (0.25 megapixels), medium (1.5), hd (4); full, 4k, auto, 50MP: the photo's own size. Native default: no cap; remove.bg's: preview.",
    wires: { native: {}, removebg: { default: 'preview' }, photoroom: { default: 'full', only: ['preview', 'medium', 'hd', 'full'] } },
    example: 'full',
  }),
  scale: declare({
    kind: percent(10, 100, { original: undefined }, 'invalid_scale'),
    description: 'original (default) or 10% to 100%: the subject scaled to fill that share of the canvas, which keeps its size; centred unless position says otherwise.',
    wires: NATIVE_AND_REMOVEBG,
    example: '80%',
  }),
  position: declare({
    kind: place(),
    description: 'original (default: where the subject was), center, "x%" or "x% y%": where the subject stands in the room the canvas leaves it.',
    wires: NATIVE_AND_REMOVEBG,
    example: '50% 100%',
  }),
  add_shadow: declare({
    kind: boolean(),
    description: 'A shadow under the subject, cast from its own alpha (default false).',
    wires: NATIVE_AND_REMOVEBG,
    flag: 'shadow',
  }),
  shadow_type: declare({
    kind: choice({ drop: 'drop', car: 'car', '3D': '3D' } as const, 'invalid_shadow'),
    description: "drop (default), 3D or car (flattened onto the subject's bottom edge), with add_shadow.",
    wires: NATIVE_AND_REMOVEBG,
  }),
  shadow_opacity: declare({
    kind: share('invalid_shadow'),
    description: "The shadow's darkness, 0 to 100 (default 50), with add_shadow.",
    wires: NATIVE_AND_REMOVEBG,
  }),
  model: declare({
    kind: word(MODEL_NAME, 64, "the name of one of the server's models (lower-case letters, digits, '.', '_', '-')", 'invalid_request'),
    apply: (model, into) => { into.model = model; },
    description: "Which of the server's loaded models cuts (a name from its CUTOUT_MODELS; default the first). One the server has not loaded is 400 unknown_model.",
    wires: NATIVE,
    example: 'isnet',
  }),
  type: declare({
    kind: word(/^.*$/, 64, 'a word', 'invalid_request'),
    description: 'Accepted and without effect: Cutout has one general model.',
    wires: REMOVEBG,
  }),
  type_level: declare({
    kind: word(/^.*$/, 64, 'a word', 'invalid_request'),
    description: 'Accepted and without effect.',
    wires: REMOVEBG,
  }),
  semitransparency: declare({
    kind: boolean(),
    description: 'Accepted and without effect: Cutout always keeps the semi-transparency its mask has.',
    wires: REMOVEBG,
  }),
  despill: declare({
    kind: boolean(),
    description: 'Accepted and without effect: the refinement always takes the old background out of soft edges.',
    wires: { photoroom: {} },
  }),
} as const;

export type OptionName = keyof typeof OPTIONS;

/** The value an option's kind reads. */
export type OptionValue<N extends OptionName> = (typeof OPTIONS)[N]['kind'] extends ValueKind<infer T> ? T : never;

/** The names one wire takes, in the table's order. */
export function optionsOf(wire: Wire): OptionName[] {
  return (Object.keys(OPTIONS) as OptionName[]).filter((name) => OPTIONS[name].wires[wire as keyof (typeof OPTIONS)[typeof name]['wires']] !== undefined);
}

/** How `wire` takes option `name`, or undefined when it does not. */
export function wireUse(name: OptionName, wire: Wire): WireUse | undefined {
  return (OPTIONS[name].wires as Partial<Record<Wire, WireUse>>)[wire];
}
