import { CutoutError } from '../errors.js';
import { PROVIDER_UNAVAILABLE } from './execution-provider.js';
import { buildInt8Model, rangesFor, rangesPathFor } from './int8-model.js';
import { installHint, ModelCatalogError, resolveModel, type ResolvedModel } from './installed-models.js';
import { DEFAULT_MODEL } from './model-presets.js';
import { ISNET_PROCESSING } from './model-processing.js';
import { loadSegmenter } from './onnx-segmenter.js';
import { decidePrecision, runPrecisionProbe, type PrecisionChoice, type PrecisionSetting } from './precision.js';
import type { ProbeResult } from './segmenter-protocol.js';
import type { Segmenter } from './segmenter.js';

export interface ModelServiceOptions {
  dataDir: string;
  /** CUTOUT_MODELS: the models to load, the first the default. Default: the bundled one alone. */
  models?: readonly string[];
  /** An ONNX file to serve as the bundled model's name instead of the bundled file (CUTOUT_MODEL_PATH). */
  modelPath?: string;
  threads: number;
  /** Model sessions on their own worker threads (CUTOUT_INFERENCE_CONCURRENCY), per model. */
  instances: number;
  /** CUTOUT_INFERENCE_MEMORY_ARENA; see SegmenterOptions.memoryArena. */
  memoryArena?: boolean;
  /** CUTOUT_INFERENCE_MEMORY_PATTERN; see SegmenterOptions.memoryPattern. */
  memoryPattern?: boolean;
  /** CUTOUT_MODEL_PRECISION (default `auto`); see precision.ts. */
  precision?: PrecisionSetting;
  /** CUTOUT_EXECUTION_PROVIDER (default `cpu`). */
  executionProvider?: string;
}

/** One loaded model: its name, its session and which form of it runs. */
export interface LoadedModel {
  name: string;
  segmenter: Segmenter;
  /** Which form runs and why; undefined for a segmenter loaded elsewhere (tests). */
  choice?: PrecisionChoice;
}

/**
 * Owns the process's models (CUTOUT_MODELS): finds each one's file (the bundled model is
 * assembled on first start, the others installed with `cutout models add`), chooses its
 * precision (precision.ts, int8-model.ts), loads it with its own processing and warms it up
 * with one pass so the first request does not pay for it. Until all are loaded
 * {@link ModelService.segmenterFor} throws `not_ready` and `/readyz` says 503; a model it
 * cannot find or load stops the start with a message that says which and how to install it.
 */
export class ModelService {
  #models: Map<string, LoadedModel> | undefined;
  #loading: Promise<void> | undefined;
  readonly #names: readonly string[];
  readonly #options: ModelServiceOptions;

  constructor(options: ModelServiceOptions) {
    this.#options = options;
    this.#names = options.models?.length ? [...options.models] : [DEFAULT_MODEL];
  }

  /** Wraps already loaded segmenters (tests share them across apps); the first is the default. */
  static ofSegmenters(models: LoadedModel[]): ModelService {
    const service = new ModelService({ dataDir: '', threads: 1, instances: 1, models: models.map((model) => model.name) });
    service.#models = new Map(models.map((model) => [model.name, model]));
    return service;
  }

  /** Wraps one already loaded segmenter as the bundled model's name. */
  static ofSegmenter(segmenter: Segmenter, choice?: PrecisionChoice): ModelService {
    return ModelService.ofSegmenters([{ name: DEFAULT_MODEL, segmenter, choice }]);
  }

  /** The models this process serves, in CUTOUT_MODELS' order: the first is the default. */
  get names(): readonly string[] {
    return this.#names;
  }

  /** Which form of the default model runs and why; undefined until it is chosen. */
  get precision(): PrecisionChoice | undefined {
    return this.#models?.get(this.#names[0])?.choice;
  }

  /** The loaded models in CUTOUT_MODELS' order; empty until all are loaded. */
  get loaded(): LoadedModel[] {
    const models = this.#models;
    return models ? this.#names.map((name) => models.get(name)!) : [];
  }

  get ready(): boolean {
    return this.#models !== undefined;
  }

  /** The default model's segmenter. */
  get segmenter(): Segmenter {
    return this.segmenterFor().segmenter;
  }

  /**
   * The model a request named, or the default: `unknown_model` for a name this process does
   * not serve (whether or not it has finished loading), `not_ready` while loading.
   */
  segmenterFor(name?: string): LoadedModel {
    if (name !== undefined && !this.#names.includes(name)) {
      throw new CutoutError('unknown_model', `There is no model ${JSON.stringify(name)} here; this server has loaded ${this.#names.join(', ')}.`);
    }
    const models = this.#models;
    if (!models) throw new CutoutError('not_ready', 'The model is still loading; retry in a few seconds.', { headers: { 'retry-after': '5' } });
    return models.get(name ?? this.#names[0])!;
  }

  /** Loads and warms up every model once, one after the other; later calls return the same promise. */
  load(): Promise<void> {
    this.#loading ??= (async () => {
      const loaded = new Map<string, LoadedModel>();
      let probe: Promise<ProbeResult> | undefined;
      const runProbe = () => (probe ??= runPrecisionProbe({ threads: this.#options.threads }));
      // Every file is found before any is loaded, so that a missing one stops the start at once.
      const models: ResolvedModel[] = [];
      for (const name of this.#names) models.push(await this.#resolve(name));
      try {
        for (const model of models) {
          const { path, choice } = await this.#choose(model, runProbe);
          loaded.set(model.name, { name: model.name, segmenter: await this.#loadAndWarm(model.name, path, model), choice });
        }
      } catch (error) {
        await Promise.all([...loaded.values()].map((model) => model.segmenter.close()));
        throw error;
      }
      this.#models = loaded;
    })();
    return this.#loading;
  }

  /** Loads one model and runs one pass through the requests' own path, so that the first request does not pay for it. */
  async #loadAndWarm(name: string, path: string, model: ResolvedModel): Promise<Segmenter> {
    let segmenter: Segmenter | undefined;
    try {
      segmenter = await loadSegmenter(path, {
        threads: this.#options.threads,
        instances: this.#options.instances,
        memoryArena: this.#options.memoryArena,
        memoryPattern: this.#options.memoryPattern,
        processing: model.processing,
        executionProvider: this.#options.executionProvider,
      });
      const { size } = segmenter;
      await segmenter.segment([{ data: new Uint8Array(3 * size * size), width: size, height: size, channels: 3 }]);
      return segmenter;
    } catch (error) {
      await segmenter?.close();
      // An unavailable provider is no fault of the model: its message says what to install.
      if ((error as { code?: unknown }).code === PROVIDER_UNAVAILABLE) throw error;
      const reason = error instanceof Error ? (error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message) : String(error);
      throw new ModelCatalogError(`model ${name} (${path}) cannot be loaded: ${reason}. ${installHint(name)}`, { cause: error });
    }
  }

  async #resolve(name: string): Promise<ResolvedModel> {
    if (name === DEFAULT_MODEL && this.#options.modelPath) return { name, path: this.#options.modelPath, processing: ISNET_PROCESSING, bundled: false };
    return resolveModel(this.#options.dataDir, name);
  }

  /**
   * The model file to load: the float32 one, or the int8 one built from it. `auto` runs the
   * probe (once for all models) and falls back to float32, saying why, where int8 is not
   * faster, there is no calibration file or the int8 model cannot be built; `int8` fails in
   * the last two cases. A model that runs on another execution provider stays as it is: the
   * int8 rewrite and its probe are for CPUs.
   */
  async #choose(model: ResolvedModel, runProbe: () => Promise<ProbeResult>): Promise<{ path: string; choice: PrecisionChoice }> {
    const setting = this.#options.precision ?? 'auto';
    const fp32 = (reason: string) => ({ path: model.path, choice: { precision: 'fp32' as const, reason } });
    const provider = this.#options.executionProvider ?? 'cpu';
    if (setting === 'fp32') return fp32('CUTOUT_MODEL_PRECISION=fp32');
    if (setting === 'auto' && provider !== 'cpu') return fp32(`auto: the models run on ${provider}; the int8 form is for CPUs`);
    // auto probes first, so that a machine where int8 does not pay never writes the int8 file.
    const choice: PrecisionChoice = setting === 'int8' ? { precision: 'int8', reason: 'CUTOUT_MODEL_PRECISION=int8' } : decidePrecision(await runProbe());
    if (choice.precision === 'fp32') return { path: model.path, choice };
    try {
      const ranges = await rangesFor(model.path, !model.bundled);
      if (!ranges) throw new Error(`there is no calibration file ${rangesPathFor(model.path)}; \`npm run quantize -- --model ${model.name}\` makes one`);
      return { path: await buildInt8Model(model.path, ranges, this.#options.dataDir), choice };
    } catch (error) {
      if (setting === 'int8') throw new Error(`CUTOUT_MODEL_PRECISION=int8, but the int8 model cannot be built (model ${model.name})`, { cause: error });
      return fp32(`auto: no int8 model (${error instanceof Error ? error.message : String(error)})`);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.loaded.map((model) => model.segmenter.close()));
  }
}
