import Type from 'typebox';
import { MODEL_NAME } from '../../model/model-presets.js';

const MAX_SIDE = 65_535;

/**
 * What each output option means, once, for the JSON bodies and the upload's form fields of
 * the OpenAPI description. The values are checked by `src/removal/output-options.ts`, which
 * says what a bad one should have been; these schemas accept the same values.
 */
const MEANING = {
  format: 'The result\'s encoding: png (default), webp, or jpg/jpeg. JPEG has no alpha: the cut-out is flattened onto bg_color, white when none is given. auto: PNG when the result has transparency, else JPEG. zip: an archive of color.jpg and alpha.png (remove.bg\'s). Wins over the Accept header.',
  channels: 'rgba (default): the cut-out. alpha: the mask alone, an 8-bit greyscale image (white = subject), exactly the alpha of the rgba answer for the same input and options.',
  bg_color: 'Composite the cut-out onto this colour: hex rgb, rrggbb or rrggbbaa, with or without #. Soft edges blend with the subject\'s cleaned colours, not the old background.',
  bg_image_url: 'Composite the cut-out onto this image (http(s) URL, fetched with the same guards and limits as image_url), scaled to cover the result.',
  crop: 'Crop the result to the subject\'s box (default false). A photo with no subject is then 422 no_foreground.',
  crop_margin: 'Margin around the cropped subject: pixels (30 or "30px") or percent of the subject\'s box ("10%"); default 0. Past the photo\'s edge the added area is transparent (or the background).',
  max_width: 'Scale the result down (never up) to fit inside this width, after cropping; the aspect ratio is kept.',
  max_height: 'Scale the result down (never up) to fit inside this height, after cropping.',
  roi: 'Region of interest, "x1 y1 x2 y2" in pixels or percent of the photo ("10% 5% 90% 100%"): only what lies inside can be foreground, and the model sees this region, widened on its shorter side towards a square (default: the whole photo).',
  refine: 'Refine the edges and their colours (default: the server\'s CUTOUT_REFINE, normally true); false returns the model\'s mask stretched as it is.',
  quality: 'best: the model looks at the photo and at its mirror image, and the two masks are fused, a steadier cut for about twice the model\'s time; fast: one look, the model\'s single guess (default: the server\'s CUTOUT_QUALITY, normally best).',
  size: 'At most this many pixels, scaled down after cropping: preview, small, regular (0.25 megapixels), medium (1.5), hd (4); full, 4k, auto, 50MP: no cap (default).',
  scale: 'original (default) or 10% to 100%: the subject scaled to fill that share of the canvas, which keeps its size; centred unless position says otherwise.',
  position: 'original (default: where the subject was), center, "x%" or "x% y%": where the subject stands in the room the canvas leaves it.',
  add_shadow: 'A shadow under the subject, cast from its own alpha (default false).',
  shadow_type: 'drop (default), 3D or car (flattened onto the subject\'s bottom edge), with add_shadow.',
  shadow_opacity: 'The shadow\'s darkness, 0 to 100 (default 50), with add_shadow.',
  model: 'Which of the server\'s loaded models cuts (a name from its CUTOUT_MODELS; default the first). A model the server has not loaded is 400 unknown_model, whose detail lists those it has.',
} as const;

const LENGTH_PATTERN = '^\\d+(\\.\\d+)?(px|%)?$';

/** The options as JSON fields (url and base64 endpoints). */
export const OPTION_FIELDS = {
  format: Type.Optional(Type.String({ enum: ['png', 'webp', 'jpg', 'jpeg', 'auto', 'zip'], description: MEANING.format })),
  channels: Type.Optional(Type.String({ enum: ['rgba', 'alpha'], description: MEANING.channels })),
  bg_color: Type.Optional(Type.String({ pattern: '^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$', description: MEANING.bg_color, examples: ['#ffffff'] })),
  bg_image_url: Type.Optional(Type.String({ minLength: 1, maxLength: 8192, description: MEANING.bg_image_url })),
  crop: Type.Optional(Type.Boolean({ description: MEANING.crop })),
  crop_margin: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: MAX_SIDE }), Type.String({ pattern: LENGTH_PATTERN })], { description: MEANING.crop_margin })),
  max_width: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_SIDE, description: MEANING.max_width })),
  max_height: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_SIDE, description: MEANING.max_height })),
  roi: Type.Optional(Type.String({ description: MEANING.roi, examples: ['10% 5% 90% 100%'] })),
  refine: Type.Optional(Type.Boolean({ description: MEANING.refine })),
  quality: Type.Optional(Type.String({ enum: ['fast', 'best'], description: MEANING.quality })),
  size: Type.Optional(Type.String({ description: MEANING.size, examples: ['preview', 'full'] })),
  scale: Type.Optional(Type.String({ description: MEANING.scale, examples: ['80%'] })),
  position: Type.Optional(Type.String({ description: MEANING.position, examples: ['center', '50% 100%'] })),
  add_shadow: Type.Optional(Type.Boolean({ description: MEANING.add_shadow })),
  shadow_type: Type.Optional(Type.String({ enum: ['drop', '3D', 'car'], description: MEANING.shadow_type })),
  shadow_opacity: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 100 }), Type.String()], { description: MEANING.shadow_opacity })),
  model: Type.Optional(Type.String({ pattern: MODEL_NAME.source, description: MEANING.model, examples: ['isnet'] })),
};

/** The same options as form fields of the upload: every value is text. */
export const OPTION_FORM_FIELDS = Object.fromEntries(
  Object.entries(MEANING).map(([name, description]) => [name, Type.Optional(Type.String({ description: `${description} (As a form field: ${name === 'crop' || name === 'refine' || name === 'add_shadow' ? 'true or false' : 'text'}.)` }))]),
);
