/**
 * Bytes per pixel that each part of the pipeline holds, as upper bounds: what the memory
 * estimate (`src/removal/memory-estimate.ts`) adds up, and what the options' costs in the
 * option table are made of (docs/configuration.md, "The memory budget", has the arithmetic
 * and the measurement that checks it). "Photo" pixels are the decoded photo's, "answer"
 * pixels the answer's.
 */
export const BYTES_PER_PIXEL = Object.freeze({
  /** The photo decoded at full size, RGBA, whose alpha the cut-out's is written into. */
  photo: 4,
  /** libheif's own heap while it decodes an HEIC, beside the RGBA it writes (it keeps about twice the picture). */
  heicDecoder: 8,
  /** The refinement's planes at full size (guide, alpha, the colour clean-up's scratch). */
  refine: 3,
  /** The model's mask stretched to full size, when not refined. */
  stretch: 1,
  /** A step that makes a new RGBA frame: crop, placement, a composite over a background. */
  frame: 4,
  /** A shadow: the moved alpha, its blur, the shadow's RGBA layer and the composite. */
  shadow: 10,
  /** A background image decoded and scaled to the answer. */
  background: 4,
  /** One 8-bit plane: the mask alone, or an alpha drawn from the subject's. */
  alpha: 1,
  /** The encoder's own working rows and buffers. */
  encoder: 1,
});

/** Upper bounds of an encoded answer's bytes per answer pixel, by format (before any Base64 copy). */
export const ENCODED_BYTES_PER_PIXEL = Object.freeze({ png: 3, webp: 1, jpeg: 1, auto: 3, zip: 4.5 });

/** Per pixel of the model's input, per look: the RGB picture, the mask, the mirror's copy. */
export const MODEL_BYTES_PER_PIXEL = 5;
