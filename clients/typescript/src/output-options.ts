// Generated from src/options/option-table.ts by `npx tsx scripts/client-options.ts`: do not edit.
// test/client/client-options.test.ts fails when this file and the server's table differ.

/**
 * The result a removal asks for: the API's output options, under the API's own names
 * (remove.bg's), so that its reference applies word for word. All optional; the server
 * checks the values and answers 400 `invalid_request` naming a bad one.
 */
export interface OutputOptions {
  /**
   * The result's encoding: png, webp, or jpg/jpeg (flattened onto bg_color, white when none is
   * given); auto: PNG when the result has transparency, else JPEG; zip: an archive of color.jpg and
   * alpha.png (remove.bg's). Native default: the type the Accept header prefers, else png; wins
   * over Accept.
   */
  format?: 'auto' | 'png' | 'jpg' | 'jpeg' | 'webp' | 'zip';
  /**
   * rgba (default): the cut-out. alpha: the mask alone, an 8-bit greyscale image (white = subject),
   * exactly the alpha of the rgba answer.
   */
  channels?: 'rgba' | 'alpha';
  /**
   * Composite the cut-out onto this colour: hex rgb, rgba, rrggbb or rrggbbaa (# optional), or a
   * CSS colour name. Soft edges blend with the subject's cleaned colours.
   */
  bg_color?: string;
  /**
   * Composite the cut-out onto this image (http(s) URL, fetched with the same guards and limits as
   * image_url), scaled to cover the result. At most 8192 characters, matching `^[\s\S]+$`.
   */
  bg_image_url?: string;
  /**
   * Lay the cut-out over the photo's own background, blurred by this radius in the answer's pixels:
   * the subject sharp, the scene softened behind it, as a portrait camera does. Not with another
   * background or channels=alpha. As a number: 1 to 500.
   */
  bg_blur?: number;
  /**
   * Crop the result to the subject's box (default false). A photo with no subject is then 422
   * no_foreground.
   */
  crop?: boolean;
  /**
   * Margin around the cropped subject (default 0): one, two or four lengths (all sides; top/bottom
   * and left/right; top, right, bottom, left), each whole pixels up to 500 or a percent of the
   * subject's box up to 50%. As a number: 0 to 500.
   */
  crop_margin?: number | string;
  /**
   * Scale the result down (never up) to fit inside this width, after cropping; the aspect ratio is
   * kept. As a number: 1 to 65535.
   */
  max_width?: number;
  /**
   * Scale the result down (never up) to fit inside this height, after cropping. As a number: 1 to
   * 65535.
   */
  max_height?: number;
  /**
   * Region of interest, "x1 y1 x2 y2" in pixels or percent of the photo: only what lies inside can
   * be foreground, and the model sees this region (default: the whole photo).
   */
  roi?: string;
  /**
   * Refine the edges and their colours (default: the server's CUTOUT_REFINE, normally true); false
   * returns the model's mask stretched as it is.
   */
  refine?: boolean;
  /**
   * fast: one look, the model's single guess; best: the model looks at the photo and at its mirror
   * image, and the two masks are fused (about twice the model's time); auto: the mirror look only
   * where the first is doubtful (default: the server's CUTOUT_QUALITY, normally auto). X-Looks says
   * how many looks were taken.
   */
  quality?: 'fast' | 'best' | 'auto';
  /**
   * At most this many pixels, scaled down after cropping: preview, small, regular (0.25
   * megapixels), medium (1.5), hd (4); full, 4k, auto, 50MP: the photo's own size. Native default:
   * no cap; remove.bg's: preview.
   */
  size?: 'preview' | 'small' | 'regular' | 'medium' | 'hd' | 'full' | '4k' | 'auto' | '50MP';
  /**
   * original (default) or 10% to 100%: the subject scaled to fill that share of the canvas, which
   * keeps its size; centred unless position says otherwise.
   */
  scale?: string;
  /**
   * original (default: where the subject was), center, "x%" or "x% y%": where the subject stands in
   * the room the canvas leaves it.
   */
  position?: string;
  /** A shadow under the subject, cast from its own alpha (default false). */
  add_shadow?: boolean;
  /** drop (default), 3D or car (flattened onto the subject's bottom edge), with add_shadow. */
  shadow_type?: 'drop' | 'car' | '3D';
  /** The shadow's darkness, 0 to 100 (default 50), with add_shadow. As a number: 0 to 100. */
  shadow_opacity?: number | string;
  /**
   * Which of the server's loaded models cuts (a name from its CUTOUT_MODELS; default the first).
   * One the server has not loaded is 400 unknown_model. At most 64 characters, matching
   * `^[a-z0-9][a-z0-9._-]{0,63}$`.
   */
  model?: string;
}

/** The option names, to pick them out of an object that holds more. */
export const OUTPUT_OPTION_NAMES = ['format', 'channels', 'bg_color', 'bg_image_url', 'bg_blur', 'crop', 'crop_margin', 'max_width', 'max_height', 'roi', 'refine', 'quality', 'size', 'scale', 'position', 'add_shadow', 'shadow_type', 'shadow_opacity', 'model'] as const satisfies readonly (keyof OutputOptions)[];

/** The options that were given (undefined ones left out), as JSON fields. */
export function outputOptionFields(options: OutputOptions): Record<string, string | number | boolean> {
  const fields: Record<string, string | number | boolean> = {};
  for (const name of OUTPUT_OPTION_NAMES) {
    const value = options[name];
    if (value !== undefined) fields[name] = value;
  }
  return fields;
}
