import { MODEL_NAME } from '../model/model-presets.js';
import type { AnswerSpec, RequestedFormat } from '../pipeline/answer-spec.js';
import { BYTES_PER_PIXEL as B } from '../pipeline/pixel-bytes.js';
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

/**
 * What an option's effect holds while the answer is finished, on top of every removal's own
 * (`memory-estimate.ts` adds them up; docs/configuration.md's formula is written from them).
 * Options that make one effect together (`scale` and `position`) share one cost, counted once.
 */
export interface OptionCost {
  /** Whether the answer has the effect: read from the answer, since remove.bg's `bg_image_file` or the Accept header make some too. */
  when: (answer: AnswerSpec) => boolean;
  /** Bytes per pixel of the answer. */
  answer: number;
  /** Bytes per pixel of the photo as decoded. */
  photo?: number;
  /** What those bytes are, in words. */
  what: string;
}

/**
 * What an option costs in memory: its {@link OptionCost}; `none` when it holds nothing of its
 * own (it shapes another option's effect, changes the answer's size, or has no effect); `base`
 * when every removal pays it, with the request's choice or the server's default
 * (CUTOUT_REFINE, CUTOUT_QUALITY, the default model), so the estimate counts it from the
 * removal's settings.
 */
export type OptionMemory = OptionCost | 'none' | 'base';

/** One option, declared once: every reader, schema, flag, type, cost and table comes from here. */
export interface OptionDeclaration<T> {
  kind: ValueKind<T>;
  /** Where its value goes in the removal's options (most go into the answer); absent: it has no effect of its own (or one of the rules between options gives it one, `read-options.ts`). */
  apply?: (value: T, into: OutputOptions) => void;
  memory: OptionMemory;
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

const hasBackground = (answer: AnswerSpec, kind: 'colour' | 'image' | 'blur') => answer.background !== undefined && kind in answer.background;
/** The subject placed on a new frame, by `scale`, `position` or both. */
const PLACEMENT: OptionCost = { when: (answer) => !!answer.placement, answer: B.frame, what: 'the frame the subject is placed on' };

/**
 * Every option a removal takes, on every wire, under remove.bg's name wherever remove.bg has
 * one. The order is the order of the docs' table and of the CLI's help.
 *
 * A new option goes here, with what it costs in memory (and its effect in the answer's spec
 * and the finishing steps); the native JSON and form reading, remove.bg's and Photoroom's
 * reading, the request schemas of both OpenAPI documents, the CLI's flags, try-it's "More
 * options", the memory estimate and the upload's field limit follow from this table, and two
 * scripts write the rest from it: the SDK's option types (`npx tsx scripts/client-options.ts`)
 * and the docs' option table and memory formula (`npx tsx scripts/docs/option-docs.ts`).
 */
export const OPTIONS = {
  format: declare({
    kind: choice(FORMATS, 'invalid_format'),
    apply: (format, into) => { into.format = format; },
    memory: { when: (answer) => answer.format === 'jpeg' && answer.channels === 'rgba' && !answer.background, answer: B.frame, what: "a JPEG's white under the cut-out" },
    description: "The result's encoding (native default: the image type Accept prefers, else `png`; the option wins over Accept). JPEG has no alpha: the cut-out is flattened onto `bg_color`, white when none is given. `auto`: PNG when the result has transparency, else JPEG. `zip` (`application/zip`): `color.jpg` with the colours and `alpha.png` with the mask, as remove.bg builds it.",
    wires: { native: {}, removebg: { default: 'auto' }, photoroom: { default: 'png', only: ['png', 'jpg', 'jpeg', 'webp'] } },
    example: 'webp',
  }),
  channels: declare({
    kind: choice({ rgba: 'rgba', alpha: 'alpha' } as const, 'invalid_channels'),
    apply: (channels, into) => { into.answer.channels = channels; },
    memory: { when: (answer) => answer.channels === 'alpha', answer: B.alpha, what: 'the mask alone' },
    description: '`rgba` (default): the cut-out. `alpha`: the mask alone, an 8-bit greyscale image (white = subject), exactly the alpha of the `rgba` answer for the same input and options (PNG and WebP keep it exactly, WebP losslessly; a JPEG mask is within 2 levels of it). With a background it is a contradiction: 400.',
    wires: EVERY_WIRE,
  }),
  bg_color: declare({
    kind: colour(),
    apply: (colour, into) => { into.answer.background = { colour }; },
    memory: { when: (answer) => hasBackground(answer, 'colour'), answer: B.frame, what: 'the composite over the colour' },
    background: true,
    description: "Composite the cut-out onto this colour; an alpha below `ff` leaves the result that transparent. Soft edges blend with the subject's cleaned colours, not the old background.",
    wires: EVERY_WIRE,
    example: '#ffffff',
  }),
  bg_image_url: declare({
    kind: word(/^[\s\S]+$/, 8192, 'an http(s) URL of at most 8192 characters', 'failed_bg_download'),
    apply: (url, into) => {
      into.bgImageUrl = url;
      into.answer.background = { image: true };
    },
    memory: { when: (answer) => hasBackground(answer, 'image'), answer: B.background + B.frame, what: 'the image scaled to the answer, and the composite' },
    background: true,
    description: 'Composite onto this image (http(s) URL), fetched with exactly the guards and limits of `image_url` (while the model runs), flattened on white if it has transparency, and scaled to cover the result. Not with another background.',
    wires: NATIVE_AND_REMOVEBG,
  }),
  bg_blur: declare({
    kind: wholeNumber(1, 500, 'pixels'),
    apply: (radius, into) => { into.answer.background = { blur: radius }; },
    memory: { when: (answer) => hasBackground(answer, 'blur'), photo: B.photo, answer: B.background + B.frame, what: 'the photo copied before its alpha is written, its blur at the answer\'s size, and the composite' },
    background: true,
    description: "Lay the cut-out over the photo's own background, blurred by this radius in the answer's pixels: the subject sharp, the scene softened behind it, as a portrait camera does. Works with `crop`, `max_width` and the other steps (the background is the photo under the answer's frame); not with another background or `channels=alpha`.",
    wires: NATIVE,
    example: '12',
  }),
  crop: declare({
    kind: boolean(),
    memory: { when: (answer) => !!answer.crop, answer: B.frame, what: 'the frame cropped to the subject' },
    description: "Crop the result to the subject's box (default `false`). A photo in which the model finds no subject is then 422 `no_foreground`; without `crop` it is the fully transparent result.",
    wires: EVERY_WIRE,
  }),
  crop_margin: declare({
    kind: sideLengths(MAX_MARGIN_PX, MAX_MARGIN_PERCENT, 'invalid_crop_margin', 'of the subject'),
    memory: 'none',
    description: "Margin around the cropped subject (default 0), with `crop`. Past the photo's edge the added area is transparent (or the background).",
    wires: NATIVE_AND_REMOVEBG,
    example: '10%',
  }),
  max_width: declare({
    kind: wholeNumber(1, MAX_SIDE, 'pixels'),
    apply: (width, into) => { into.answer.maxWidth = width; },
    memory: 'none',
    description: 'Scale the result down (never up) to fit inside this width, after cropping; the aspect ratio is kept. Without `crop` the photo is decoded straight to that size, so a small answer from a large photo costs less than the full-size one.',
    wires: NATIVE,
  }),
  max_height: declare({
    kind: wholeNumber(1, MAX_SIDE, 'pixels'),
    apply: (height, into) => { into.answer.maxHeight = height; },
    memory: 'none',
    description: 'Scale the result down (never up) to fit inside this height, after cropping, as `max_width`.',
    wires: NATIVE,
  }),
  roi: declare({
    kind: region(),
    apply: (roi, into) => { into.roi = roi; },
    memory: 'none',
    description: 'Region of interest (default: the whole photo): only what lies inside can be foreground, and the model sees this region (widened on its shorter side towards a square, so that it is not squeezed), so a small subject in a large photo is segmented at a higher resolution and a neighbour outside it is never picked. A region reaching past the photo is cut to it; one with no pixel in the photo is 400.',
    wires: NATIVE_AND_REMOVEBG,
    example: '10% 5% 90% 100%',
  }),
  refine: declare({
    kind: boolean(),
    apply: (refine, into) => { into.refine = refine; },
    memory: 'base',
    description: "Refine the edges and their colours (default: the server's `CUTOUT_REFINE`, normally true); `false` gives the model's mask stretched as it is.",
    wires: NATIVE,
  }),
  quality: declare({
    kind: choice(QUALITIES),
    apply: (quality, into) => { into.quality = quality; },
    memory: 'base',
    description: "`fast`: one look, the model's single guess; `best`: the model looks at the photo and at its mirror image, and the two masks are fused, a steadier cut for about twice the model's time; `auto`: the mirror look only where the first is doubtful (default: the server's `CUTOUT_QUALITY`, normally `auto`). `X-Looks` says how many looks were taken.",
    wires: NATIVE,
  }),
  size: declare({
    kind: choice(SIZES, 'invalid_size'),
    apply: (maxPixels, into) => {
      if (maxPixels !== undefined) into.answer.maxPixels = maxPixels;
    },
    memory: 'none',
    description: "remove.bg's sizes: at most 0.25 megapixels (`preview`, `small`, `regular`), 1.5 (`medium`) or 4 (`hd`), scaled down after the crop (never up); `full`, `4k`, `auto` and `50MP` keep the photo's size. Native default: no cap; remove.bg's: `preview`.",
    wires: { native: {}, removebg: { default: 'preview' }, photoroom: { default: 'full', only: ['preview', 'medium', 'hd', 'full'] } },
    example: 'full',
  }),
  scale: declare({
    kind: percent(10, 100, { original: undefined }, 'invalid_scale'),
    memory: PLACEMENT,
    description: '`original` (default) or a share of the canvas: the subject scaled (up or down) to fill it, and the canvas keeps its size; centred unless `position` says otherwise.',
    wires: NATIVE_AND_REMOVEBG,
    example: '80%',
  }),
  position: declare({
    kind: place(),
    memory: PLACEMENT,
    description: 'Where the subject stands in the room the canvas leaves it (0 % left or top, 100 % right or bottom; `center`); `original` (default): where it was.',
    wires: NATIVE_AND_REMOVEBG,
    example: '50% 100%',
  }),
  add_shadow: declare({
    kind: boolean(),
    memory: { when: (answer) => !!answer.shadow, answer: B.shadow, what: 'the moved alpha, its blur, the shadow\'s layer and the composite' },
    description: 'A shadow under the subject, cast from its own alpha: moved down, blurred and darkened, laid under the cut-out (default `false`).',
    wires: NATIVE_AND_REMOVEBG,
    flag: 'shadow',
  }),
  shadow_type: declare({
    kind: choice({ drop: 'drop', car: 'car', '3D': '3D' } as const, 'invalid_shadow'),
    memory: 'none',
    description: "With `add_shadow`: how far the shadow falls and how soft it is, `drop` (default), `3D`, or `car`, flattened onto the subject's bottom edge.",
    wires: NATIVE_AND_REMOVEBG,
  }),
  shadow_opacity: declare({
    kind: share('invalid_shadow'),
    memory: 'none',
    description: "With `add_shadow`: the shadow's darkness, 0 to 100 (default 50).",
    wires: NATIVE_AND_REMOVEBG,
  }),
  outline: declare({
    kind: wholeNumber(1, 200, 'pixels'),
    apply: (width, into) => { into.answer.outline = { ...into.answer.outline, width }; },
    memory: { when: (answer) => !!answer.outline?.width, answer: Float32Array.BYTES_PER_ELEMENT + B.frame, what: "each pixel's distance to the subject, and the outlined frame" },
    description: "A stroke this many pixels of the answer wide around the subject, in `outline_color`, laid under the cut-out: the sticker look. Drawn inside the answer's frame (with `crop`, a `crop_margin` keeps it whole); a shadow is cast from the outlined subject.",
    wires: NATIVE_AND_REMOVEBG,
    example: '12',
  }),
  outline_color: declare({
    kind: colour('invalid_request'),
    apply: (colour, into) => { into.answer.outline = { ...into.answer.outline, colour }; },
    memory: 'none',
    description: "With `outline`: the stroke's colour (default white); an alpha below `ff` leaves it that transparent.",
    wires: NATIVE_AND_REMOVEBG,
    example: '#ffffff',
  }),
  model: declare({
    kind: word(MODEL_NAME, 64, "the name of one of the server's models (lower-case letters, digits, '.', '_', '-')", 'invalid_request'),
    apply: (model, into) => { into.model = model; },
    memory: 'base',
    description: "Which of the server's loaded models cuts (default: the first of its `CUTOUT_MODELS`, normally the bundled `isnet`); one the server has not loaded is 400 `unknown_model`, naming those it has (docs/models.md).",
    wires: NATIVE,
    example: 'isnet',
  }),
  type: declare({
    kind: word(/^.*$/, 64, 'a word', 'invalid_request'),
    memory: 'none',
    description: 'Accepted and without effect: Cutout has one general model.',
    wires: REMOVEBG,
  }),
  type_level: declare({
    kind: word(/^.*$/, 64, 'a word', 'invalid_request'),
    memory: 'none',
    description: 'Accepted and without effect.',
    wires: REMOVEBG,
  }),
  semitransparency: declare({
    kind: boolean(),
    memory: 'none',
    description: 'Accepted and without effect: Cutout always keeps the semi-transparency its mask has.',
    wires: REMOVEBG,
  }),
  despill: declare({
    kind: boolean(),
    memory: 'none',
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
