import { CutoutError } from '../errors.js';
import { assembleModel } from './assemble-model.js';
import { loadSegmenter } from './onnx-segmenter.js';
import type { Segmenter } from './segmenter.js';

export interface ModelServiceOptions {
  dataDir: string;
  /** An ONNX file to use instead of the bundled model. */
  modelPath?: string;
  threads: number;
  /** Model sessions on their own worker threads (CUTOUT_INFERENCE_CONCURRENCY). */
  instances: number;
  /** CUTOUT_INFERENCE_MEMORY_ARENA; see SegmenterOptions.memoryArena. */
  memoryArena?: boolean;
  /** CUTOUT_INFERENCE_MEMORY_PATTERN; see SegmenterOptions.memoryPattern. */
  memoryPattern?: boolean;
}

/**
 * Owns the process's one model session: assembles the bundled model on first start, loads
 * it, and warms it up with one pass so the first request does not pay for it. Until then
 * {@link ModelService.segmenter} throws `not_ready` and `/readyz` says 503.
 */
export class ModelService {
  #segmenter: Segmenter | undefined;
  #loading: Promise<Segmenter> | undefined;
  readonly #options: ModelServiceOptions;

  constructor(options: ModelServiceOptions) {
    this.#options = options;
  }

  /** Wraps an already loaded segmenter (tests share one across apps). */
  static ofSegmenter(segmenter: Segmenter): ModelService {
    const service = new ModelService({ dataDir: '', threads: 1, instances: 1 });
    service.#segmenter = segmenter;
    return service;
  }

  get ready(): boolean {
    return this.#segmenter !== undefined;
  }

  get segmenter(): Segmenter {
    if (!this.#segmenter) throw new CutoutError('not_ready', 'The model is still loading; retry in a few seconds.', { headers: { 'retry-after': '5' } });
    return this.#segmenter;
  }

  /** Loads and warms up the model once; later calls return the same promise. */
  load(): Promise<Segmenter> {
    this.#loading ??= (async () => {
      const path = this.#options.modelPath ?? (await assembleModel(this.#options.dataDir));
      const segmenter = await loadSegmenter(path, { threads: this.#options.threads, instances: this.#options.instances, memoryArena: this.#options.memoryArena, memoryPattern: this.#options.memoryPattern });
      // The warm-up takes the requests' own path (tensor and mask made on the model's thread).
      const { size } = segmenter;
      await segmenter.segment({ data: new Uint8Array(3 * size * size), width: size, height: size, channels: 3 });
      this.#segmenter = segmenter;
      return segmenter;
    })();
    return this.#loading;
  }

  async close(): Promise<void> {
    await this.#segmenter?.close();
  }
}
