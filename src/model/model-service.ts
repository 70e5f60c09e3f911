import { CutoutError } from '../errors.js';
import { PROVIDER_UNAVAILABLE } from './execution-provider.js';
import { assembleModel } from './assemble-model.js';
import { buildInt8Model, rangesFor, rangesPathFor } from './int8-model.js';
import { installHint, ModelCatalogError, resolveModel, type ResolvedModel } from './installed-models.js';
import { DEFAULT_MODEL } from './model-presets.js';
import { ISNET_PROCESSING } from './model-processing.js';
import { loadSegmenter, type OnnxSegmenter } from './onnx-segmenter.js';
import { decidePrecision, runPrecisionProbe, type PrecisionChoice, type PrecisionSetting } from './precision.js';
import type { ProbeResult } from './segmenter-protocol.js';
import type { Segmenter } from './segmenter.js';
import { gpuHint, hideSoftwareDrivers, type GpuHint } from './vulkan-drivers.js';

/** CUTOUT_EXECUTION_PROVIDER: a provider, or `auto` (WebGPU where it finds a GPU that is faster than the CPU, else the CPU). */
export type ExecutionProviderSetting = 'auto' | 'cpu' | 'cuda' | 'tensorrt' | 'dml' | 'coreml' | 'webgpu';

/**
 * Off the CPU, a run that has not answered after this many of its start's passes, or this
 * many ms if more, is taken for a lost device (onnx-segmenter.ts's stall limit): far beyond a
 * slow pass under load, well within what a request may wait.
 */
const STALL_PASSES = 20;
const STALL_FLOOR_MS = 30_000;

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
  executionProvider?: ExecutionProviderSetting;
  /** What the host offers WebGPU (`auto` reads it); default: vulkan-drivers.ts reads this host's. */
  gpuHint?: () => GpuHint;
}

/** One loaded model: its name, its session and which form of it runs. */
export interface LoadedModel {
  name: string;
  segmenter: Segmenter;
  /** Which form runs and why; undefined for a segmenter loaded elsewhere (tests). */
  choice?: PrecisionChoice;
  /** Where it runs: `cpu`, or the GPU provider; undefined for a segmenter loaded elsewhere (tests). */
  provider?: string;
  /** Why there: CUTOUT_EXECUTION_PROVIDER, or what `auto` found and measured. */
  providerReason?: string;
  /** The time of one pass measured at start, in ms: the warm-up's on the CPU, the pass after it elsewhere (the first compiles shaders). */
  passMs?: number;
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
  #hint: GpuHint | undefined;
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

  /** True once every model is loaded, until one can run no more (its GPU lost: {@link failure}). */
  get ready(): boolean {
    return this.#models !== undefined && !this.failure;
  }

  /** Why a loaded model can run no more (its thread died, its GPU was lost); undefined while all can. */
  get failure(): Error | undefined {
    return this.loaded.map((model) => model.segmenter.failure).find((failure) => failure !== undefined);
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
    const model = models.get(name ?? this.#names[0])!;
    if (model.segmenter.failure) throw model.segmenter.failure;
    return model;
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
        for (const model of models) loaded.set(model.name, await this.#loadOnProvider(model, runProbe));
      } catch (error) {
        await Promise.all([...loaded.values()].map((model) => model.segmenter.close()));
        throw error;
      }
      this.#models = loaded;
    })();
    return this.#loading;
  }

  /**
   * Loads one model where CUTOUT_EXECUTION_PROVIDER says. `auto` runs on the CPU unless the
   * host may have a hardware GPU for WebGPU (vulkan-drivers.ts: a look at a few files, so a
   * CPU-only host starts as fast as with `cpu` and logs nothing more); where it may, it loads
   * the model on both, times a pass on each, and keeps the faster. WebGPU is then kept from
   * software drivers (lavapipe), which would otherwise stand in for a missing GPU.
   */
  async #loadOnProvider(model: ResolvedModel, runProbe: () => Promise<ProbeResult>): Promise<LoadedModel> {
    const setting = this.#options.executionProvider ?? 'cpu';
    if (setting !== 'auto') return this.#loadForm(model, setting, runProbe, `CUTOUT_EXECUTION_PROVIDER=${setting}`);
    const hint = (this.#hint ??= (this.#options.gpuHint ?? gpuHint)());
    if (!hint.hardware) return this.#loadForm(model, 'cpu', runProbe, `auto: no GPU for WebGPU here (${hint.summary})`);
    const cpu = await this.#loadForm(model, 'cpu', runProbe, '', true);
    const hidden = hideSoftwareDrivers(hint.drivers, process.env.VK_LOADER_DRIVERS_DISABLE);
    // The Vulkan loader reads the process's environment when WebGPU first starts, after this.
    if (hidden) process.env.VK_LOADER_DRIVERS_DISABLE = hidden;
    let gpu: LoadedModel;
    try {
      gpu = await this.#loadForm(model, 'webgpu', runProbe, '');
    } catch (error) {
      return { ...cpu, providerReason: `auto: WebGPU did not start (${error instanceof Error ? error.message : String(error)})` };
    }
    const measured = `a pass took ${gpu.passMs?.toFixed(0)} ms on WebGPU (${hint.summary}) against ${cpu.passMs?.toFixed(0)} ms on the CPU (${cpu.choice?.precision})`;
    const [kept, dropped] = gpu.passMs! < cpu.passMs! ? [gpu, cpu] : [cpu, gpu];
    await dropped.segmenter.close();
    return { ...kept, providerReason: `auto: ${measured}` };
  }

  /** Loads one model on `provider` in the form #choose picks, warmed up and its pass timed. */
  async #loadForm(model: ResolvedModel, provider: Exclude<ExecutionProviderSetting, 'auto'>, runProbe: () => Promise<ProbeResult>, providerReason: string, timeAgain = false): Promise<LoadedModel> {
    const { path, choice } = await this.#choose(model, runProbe, provider);
    const { segmenter, passMs } = await this.#loadAndWarm(model.name, path, model, provider, timeAgain || provider !== 'cpu');
    return { name: model.name, segmenter, choice, provider, providerReason, passMs };
  }

  /**
   * Loads one model and runs one pass through the requests' own path, so that the first
   * request does not pay for it, and times it; `timeAgain` times one more pass instead (the
   * first on a GPU compiles its shaders), which sets how long a run may take there before
   * the device is taken for lost.
   */
  async #loadAndWarm(name: string, path: string, model: ResolvedModel, provider: string, timeAgain: boolean): Promise<{ segmenter: OnnxSegmenter; passMs: number }> {
    let segmenter: OnnxSegmenter | undefined;
    try {
      segmenter = await loadSegmenter(path, {
        threads: this.#options.threads,
        instances: this.#options.instances,
        memoryArena: this.#options.memoryArena,
        memoryPattern: this.#options.memoryPattern,
        processing: model.processing,
        executionProvider: provider,
      });
      const { size } = segmenter;
      const pass = async (loaded: OnnxSegmenter) => {
        const started = performance.now();
        await loaded.segment([{ data: new Uint8Array(3 * size * size), width: size, height: size, channels: 3 }]);
        return performance.now() - started;
      };
      let passMs = await pass(segmenter);
      if (timeAgain) passMs = await pass(segmenter);
      if (provider !== 'cpu') segmenter.setStallLimit(Math.max(STALL_FLOOR_MS, STALL_PASSES * passMs));
      return { segmenter, passMs };
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
   * int8 rewrite and its probe are for CPUs; on WebGPU, `auto` runs the bundled model in
   * float16 as the package ships it and another model as its file stores it.
   */
  async #choose(model: ResolvedModel, runProbe: () => Promise<ProbeResult>, provider: string): Promise<{ path: string; choice: PrecisionChoice }> {
    const setting = this.#options.precision ?? 'auto';
    const fp32 = (reason: string) => ({ path: model.path, choice: { precision: 'fp32' as const, reason } });
    if (setting === 'fp32') return fp32('CUTOUT_MODEL_PRECISION=fp32');
    if (setting === 'auto' && provider === 'webgpu') {
      if (model.bundled) return { path: await assembleModel(this.#options.dataDir, { form: 'fp16' }), choice: { precision: 'fp16', reason: 'auto: on webgpu, the bundled model in float16 as shipped' } };
      return { path: model.path, choice: { precision: 'stored', reason: 'auto: on webgpu, the model as its file stores it' } };
    }
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
