import { CutoutError } from '../errors.js';
import { assembleModel } from './assemble-model.js';
import { buildInt8Model, rangesFor, rangesPathFor } from './int8-model.js';
import { loadSegmenter } from './onnx-segmenter.js';
import { decidePrecision, runPrecisionProbe, type PrecisionChoice, type PrecisionSetting } from './precision.js';
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
  /** CUTOUT_MODEL_PRECISION (default `auto`); see precision.ts. */
  precision?: PrecisionSetting;
}

/**
 * Owns the process's one model session: assembles the bundled model on first start (and its
 * int8 form, int8-model.ts), chooses which runs (precision.ts), loads it, and warms it up with
 * one pass so the first request does not pay for it. Until then
 * {@link ModelService.segmenter} throws `not_ready` and `/readyz` says 503.
 */
export class ModelService {
  #segmenter: Segmenter | undefined;
  #loading: Promise<Segmenter> | undefined;
  #choice: PrecisionChoice | undefined;
  readonly #options: ModelServiceOptions;

  constructor(options: ModelServiceOptions) {
    this.#options = options;
  }

  /** Wraps an already loaded segmenter (tests share one across apps). */
  static ofSegmenter(segmenter: Segmenter, choice?: PrecisionChoice): ModelService {
    const service = new ModelService({ dataDir: '', threads: 1, instances: 1 });
    service.#segmenter = segmenter;
    service.#choice = choice;
    return service;
  }

  /** Which form of the model runs and why; undefined until it is chosen. */
  get precision(): PrecisionChoice | undefined {
    return this.#choice;
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
      const fp32Path = this.#options.modelPath ?? (await assembleModel(this.#options.dataDir));
      const { path, choice } = await this.#choose(fp32Path);
      this.#choice = choice;
      const segmenter = await loadSegmenter(path, { threads: this.#options.threads, instances: this.#options.instances, memoryArena: this.#options.memoryArena, memoryPattern: this.#options.memoryPattern });
      // The warm-up takes the requests' own path (tensor and mask made on the model's thread).
      const { size } = segmenter;
      await segmenter.segment([{ data: new Uint8Array(3 * size * size), width: size, height: size, channels: 3 }]);
      this.#segmenter = segmenter;
      return segmenter;
    })();
    return this.#loading;
  }

  /**
   * The model file to load: the float32 one, or the int8 one built from it. `auto` runs the
   * probe and falls back to float32, saying why, where int8 is not faster, there is no
   * calibration file or the int8 model cannot be built; `int8` fails in the last two cases.
   */
  async #choose(fp32Path: string): Promise<{ path: string; choice: PrecisionChoice }> {
    const setting = this.#options.precision ?? 'auto';
    const fp32 = (reason: string) => ({ path: fp32Path, choice: { precision: 'fp32' as const, reason } });
    if (setting === 'fp32') return fp32('CUTOUT_MODEL_PRECISION=fp32');
    // auto probes first, so that a machine where int8 does not pay never writes the int8 file.
    const choice: PrecisionChoice =
      setting === 'int8' ? { precision: 'int8', reason: 'CUTOUT_MODEL_PRECISION=int8' } : decidePrecision(await runPrecisionProbe({ threads: this.#options.threads }));
    if (choice.precision === 'fp32') return { path: fp32Path, choice };
    try {
      const ranges = await rangesFor(fp32Path, this.#options.modelPath !== undefined);
      if (!ranges) throw new Error(`there is no calibration file ${rangesPathFor(fp32Path)}; \`npm run quantize -- --model ${fp32Path}\` makes one`);
      return { path: await buildInt8Model(fp32Path, ranges, this.#options.dataDir), choice };
    } catch (error) {
      if (setting === 'int8') throw new Error('CUTOUT_MODEL_PRECISION=int8, but the int8 model cannot be built', { cause: error });
      return fp32(`auto: no int8 model (${error instanceof Error ? error.message : String(error)})`);
    }
  }

  async close(): Promise<void> {
    await this.#segmenter?.close();
  }
}
