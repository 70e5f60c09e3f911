// Generated from src/options/option-table.ts by `npx tsx scripts/client-options.ts`: do not edit.
// test/client/client-options.test.ts fails when this file and the server's table differ.

/**
 * The result a removal asks for: the API's output options, under the API's own names
 * (remove.bg's), so that its reference applies word for word. All optional; the server
 * checks the values and answers 400 `invalid_request` naming a bad one.
 */
export interface OutputOptions {
  /**
   * The result's encoding (native default: the image type Accept prefers, else `png`; the option
   * wins over Accept). JPEG has no alpha: the cut-out is flattened onto `bg_color`, white when none
   * is given. `auto`: PNG when the result has transparency, else JPEG. `zip` (`application/zip`):
   * `color.jpg` with the colours and `alpha.png` with the mask, as remove.bg builds it.
   */
  format?: 'auto' | 'png' | 'jpg' | 'jpeg' | 'webp' | 'zip';
  /**
   * `rgba` (default): the cut-out. `alpha`: the mask alone, an 8-bit greyscale image (white =
   * subject), exactly the alpha of the `rgba` answer for the same input and options (PNG and WebP
   * keep it exactly, WebP losslessly; a JPEG mask is within 2 levels of it). With a background it
   * is a contradiction: 400.
   */
  channels?: 'rgba' | 'alpha';
  /**
   * Composite the cut-out onto this colour; an alpha below `ff` leaves the result that transparent.
   * Soft edges blend with the subject's cleaned colours, not the old background.
   */
  bg_color?: string;
  /**
   * Composite onto this image (http(s) URL), fetched with exactly the guards and limits of
   * `image_url` (while the model runs), flattened on white if it has transparency, and scaled to
   * cover the result. Not with another background. At most 8192 characters, matching `^[\s\S]+$`.
   */
  bg_image_url?: string;
  /**
   * Lay the cut-out over the photo's own background, blurred by this radius in the answer's pixels:
   * the subject sharp, the scene softened behind it, as a portrait camera does. Works with `crop`,
   * `max_width` and the other steps (the background is the photo under the answer's frame); not
   * with another background or `channels=alpha`. As a number: 1 to 500.
   */
  bg_blur?: number;
  /**
   * Crop the result to the subject's box (default `false`). A photo in which the model finds no
   * subject is then 422 `no_foreground`; without `crop` it is the fully transparent result.
   */
  crop?: boolean;
  /**
   * Margin around the cropped subject (default 0), with `crop`. Past the photo's edge the added
   * area is transparent (or the background). As a number: 0 to 500.
   */
  crop_margin?: number | string;
  /**
   * Scale the result down (never up) to fit inside this width, after cropping; the aspect ratio is
   * kept. Without `crop` the photo is decoded straight to that size, so a small answer from a large
   * photo costs less than the full-size one. As a number: 1 to 65535.
   */
  max_width?: number;
  /**
   * Scale the result down (never up) to fit inside this height, after cropping, as `max_width`. As
   * a number: 1 to 65535.
   */
  max_height?: number;
  /**
   * Region of interest (default: the whole photo): only what lies inside can be foreground, and the
   * model sees this region (widened on its shorter side towards a square, so that it is not
   * squeezed), so a small subject in a large photo is segmented at a higher resolution and a
   * neighbour outside it is never picked. A region reaching past the photo is cut to it; one with
   * no pixel in the photo is 400.
   */
  roi?: string;
  /**
   * Refine the edges and their colours (default: the server's `CUTOUT_REFINE`, normally true);
   * `false` gives the model's mask stretched as it is.
   */
  refine?: boolean;
  /**
   * `fast`: one look, the model's single guess; `best`: the model looks at the photo and at its
   * mirror image, and the two masks are fused, a steadier cut for about twice the model's time;
   * `auto`: the mirror look only where the first is doubtful (default: the server's
   * `CUTOUT_QUALITY`, normally `auto`). `X-Looks` says how many looks were taken.
   */
  quality?: 'fast' | 'best' | 'auto';
  /**
   * remove.bg's sizes: at most 0.25 megapixels (`preview`, `small`, `regular`), 1.5 (`medium`) or 4
   * (`hd`), scaled down after the crop (never up); `full`, `4k`, `auto` and `50MP` keep the photo's
   * size. Native default: no cap; remove.bg's: `preview`.
   */
  size?: 'preview' | 'small' | 'regular' | 'medium' | 'hd' | 'full' | '4k' | 'auto' | '50MP';
  /**
   * `original` (default) or a share of the canvas: the subject scaled (up or down) to fill it, and
   * the canvas keeps its size; centred unless `position` says otherwise.
   */
  scale?: string;
  /**
   * Where the subject stands in the room the canvas leaves it (0 % left or top, 100 % right or
   * bottom; `center`); `original` (default): where it was.
   */
  position?: string;
  /**
   * A shadow under the subject, cast from its own alpha: moved down, blurred and darkened, laid
   * under the cut-out (default `false`).
   */
  add_shadow?: boolean;
  /**
   * With `add_shadow`: how far the shadow falls and how soft it is, `drop` (default), `3D`, or
   * `car`, flattened onto the subject's bottom edge.
   */
  shadow_type?: 'drop' | 'car' | '3D';
  /** With `add_shadow`: the shadow's darkness, 0 to 100 (default 50). As a number: 0 to 100. */
  shadow_opacity?: number | string;
  /**
   * A stroke this many pixels of the answer wide around the subject, in `outline_color`, laid under
   * the cut-out: the sticker look. Drawn inside the answer's frame (with `crop`, a `crop_margin`
   * keeps it whole); a shadow is cast from the outlined subject. As a number: 1 to 200.
   */
  outline?: number;
  /**
   * With `outline`: the stroke's colour (default white); an alpha below `ff` leaves it that
   * transparent.
   */
  outline_color?: string;
  /**
   * Which of the server's loaded models cuts (default: the first of its `CUTOUT_MODELS`, normally
   * the bundled `isnet`); one the server has not loaded is 400 `unknown_model`, naming those it has
   * (docs/models.md). At most 64 characters, matching `^[a-z0-9][a-z0-9._-]{0,63}$`.
   */
  model?: string;
}

/** The option names, to pick them out of an object that holds more. */
export const OUTPUT_OPTION_NAMES = ['format', 'channels', 'bg_color', 'bg_image_url', 'bg_blur', 'crop', 'crop_margin', 'max_width', 'max_height', 'roi', 'refine', 'quality', 'size', 'scale', 'position', 'add_shadow', 'shadow_type', 'shadow_opacity', 'outline', 'outline_color', 'model'] as const satisfies readonly (keyof OutputOptions)[];

/** The options that were given (undefined ones left out), as JSON fields. */
export function outputOptionFields(options: OutputOptions): Record<string, string | number | boolean> {
  const fields: Record<string, string | number | boolean> = {};
  for (const name of OUTPUT_OPTION_NAMES) {
    const value = options[name];
    if (value !== undefined) fields[name] = value;
  }
  return fields;
}
