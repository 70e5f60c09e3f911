import type { RawImage } from '../image/raw-image.js';
import type { ModelFit } from './model-processing.js';

/**
 * A loaded segmentation model, as the pipeline sees it: one way in. The ONNX implementation
 * is `onnx-segmenter.ts`; tests pass fakes of this same interface.
 *
 * @example const [mask] = await segmenter.segment([await decodeForModel(bytes, { maxPixels, size: segmenter.size })])
 */
export interface Segmenter {
  /** Side of the square picture the model takes (1024 for IS-Net). */
  readonly size: number;
  /** `letterbox` when the model must be told the photo's aspect (`segment`); stretch when absent. */
  readonly fit?: ModelFit;
  /**
   * The model step on pictures stretched to `size × size` RGB (the views of one photo,
   * `pipeline/views.ts`), run one after the other on one model session: resolves with one
   * `size × size` one-channel mask per picture, in order, 255 = foreground. The pictures'
   * pixels are handed to the model's thread: the caller must not use them afterwards.
   * `aspect` is the width / height of the photo (or region) they were stretched from, 1 when
   * not given: a model that takes its picture letterboxed (ModelProcessing.fit) is shown the
   * photo in its own proportions, and its mask comes back stretched like the pictures.
   */
  segment(pictures: readonly RawImage[], aspect?: number): Promise<RawImage[]>;
  /**
   * Set once the model can run no more (its thread died, or its GPU was lost): every run then
   * fails at once with this 503 `not_ready`. Absent on segmenters that cannot fail so (fakes).
   */
  readonly failure?: Error;
  /** Waits for the runs in progress, then frees the model. */
  close(): Promise<void>;
}

/** Throws unless `modelInput` is the `size × size` RGB picture a segmenter takes. */
export function assertModelInput(modelInput: RawImage, size: number): void {
  const { width, height, channels } = modelInput;
  if (width !== size || height !== size || channels !== 3) throw new Error(`segment needs ${size}×${size}×3, got ${width}×${height}×${channels}`);
}
