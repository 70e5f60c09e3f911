/**
 * The result a removal asks for: the API's output options, under the API's own names
 * (remove.bg's), so that its reference applies word for word. All optional; the server
 * checks the values and answers 400 `invalid_request` naming a bad one.
 */
export interface OutputOptions {
  /**
   * The result's encoding; `jpg` has no alpha and is flattened onto `bg_color` (white when
   * none); `auto`: PNG when the result has transparency, else JPEG; `zip`: an archive of
   * `color.jpg` and `alpha.png` (remove.bg's). Default `png`.
   */
  format?: 'png' | 'webp' | 'jpg' | 'jpeg' | 'auto' | 'zip';
  /** `alpha`: the mask alone, 8-bit greyscale, white = subject. Default `rgba`. */
  channels?: 'rgba' | 'alpha';
  /** Composite onto this colour: hex `rgb`, `rrggbb` or `rrggbbaa`, with or without `#`. */
  bg_color?: string;
  /** Composite onto the image at this http(s) URL, which the server fetches and scales to cover. */
  bg_image_url?: string;
  /** Crop the result to the subject's bounding box. */
  crop?: boolean;
  /** Margin around a cropped subject: pixels (`30`, `'30px'`) or a share of the box (`'10%'`). */
  crop_margin?: number | string;
  /** Scale the result down (never up) to fit this width, after cropping. */
  max_width?: number;
  /** Scale the result down (never up) to fit this height, after cropping. */
  max_height?: number;
  /** Region of interest, `'x1 y1 x2 y2'` in pixels or percent (`'10% 5% 90% 100%'`): only what lies inside can be foreground. */
  roi?: string;
  /** Refine the edges and their colours (default: the server's `CUTOUT_REFINE`, normally true). */
  refine?: boolean;
  /** `best`: the model looks at the photo and its mirror image, fused (steadier, about twice the model's time); `fast`: one look. Default: the server's `CUTOUT_QUALITY`, normally `best`. */
  quality?: 'fast' | 'best';
  /** At most this many pixels: `preview`/`small`/`regular` 0.25 MP, `medium` 1.5, `hd` 4; `full`, `4k`, `auto`, `50MP` none (default). */
  size?: 'preview' | 'small' | 'regular' | 'medium' | 'hd' | 'full' | '4k' | 'auto' | '50MP';
  /** `original` (default) or `'10%'`–`'100%'`: the subject scaled to that share of the canvas; centred unless `position` says otherwise. */
  scale?: string;
  /** `original` (default), `center`, `'x%'` or `'x% y%'`: where the subject stands on the canvas. */
  position?: string;
  /** A shadow under the subject, cast from its alpha. */
  add_shadow?: boolean;
  /** How the shadow falls: `drop` (default), `3D`, `car`. */
  shadow_type?: 'drop' | '3D' | 'car';
  /** The shadow's darkness, 0–100 (default 50). */
  shadow_opacity?: number;
  /** Which of the server's loaded models cuts (its `CUTOUT_MODELS`; default the first). An unknown one is 400 `unknown_model`. */
  model?: string;
}

/** The option names, to pick them out of an object that holds more. */
export const OUTPUT_OPTION_NAMES = [
  'format', 'channels', 'bg_color', 'bg_image_url', 'crop', 'crop_margin', 'max_width', 'max_height', 'roi', 'refine',
  'quality', 'size', 'scale', 'position', 'add_shadow', 'shadow_type', 'shadow_opacity', 'model',
] as const satisfies readonly (keyof OutputOptions)[];

/** The options that were given (undefined ones left out), as JSON fields. */
export function outputOptionFields(options: OutputOptions): Record<string, string | number | boolean> {
  const fields: Record<string, string | number | boolean> = {};
  for (const name of OUTPUT_OPTION_NAMES) {
    const value = options[name];
    if (value !== undefined) fields[name] = value;
  }
  return fields;
}
