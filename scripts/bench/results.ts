import type { MatMulReference, Timed } from './onnx-reference.js';
import type { LoadResult, RequestSample, StageTimings } from './http-load.js';
import type { MachineInfo } from './machine.js';
import type { Quality } from '../../src/pipeline/views.js';

/** The test photo of one size, without its bytes. */
export interface ImageInfo {
  label: string;
  width: number;
  height: number;
  megapixels: number;
  jpegBytes: number;
}

/** Medians of the Server-Timing stages, plus what the stages do not cover. */
export interface StageMedians extends StageTimings {
  /** Client-measured total minus preprocess, queue, max(inference, decode), postprocess, refine and encode: HTTP, Base64 and JSON. */
  other: number;
}

/** One quality's answers to one size in the end-to-end rounds, the request's `quality` field set. */
export interface QualityLatency {
  quality: Quality;
  samples: RequestSample[];
  median: number;
  stages: StageMedians;
  /** The median end-to-end latency over the median bare pass of the same rounds. */
  ratioToFloor: number;
}

/** One size through Cutout (HTTP) and through the peer (library call), alternating. */
export interface EndToEndResult {
  image: ImageInfo;
  /** Bare model passes timed in the same rounds. */
  floor: Timed;
  /** Cores other people's processes used, on average, during this size's rounds. */
  foreignCores: number;
  /** The default answer: the server's default quality (CUTOUT_QUALITY). */
  cutout: QualityLatency;
  /** Each other quality the run measured, in the same rounds. */
  otherQualities: QualityLatency[];
  /**
   * The default answer with `"refine": false`, right after it in each round: the default
   * answer's latency minus this one is what edge refinement costs.
   */
  unrefined?: { samples: RequestSample[]; median: number; stages: StageMedians };
  /** `ratioToCutout`: the peer's median over the default answer's. */
  peer?: { samples: number[]; median: number; ratioToCutout: number };
}

/** One concurrency level of a load phase, with what the server's process did meanwhile. */
export interface LoadPhaseResult extends Omit<LoadResult, 'samples'> {
  /** The `quality` every request of the phase sent (Cutout only). */
  quality?: Quality;
  /** Median Server-Timing inference and queue of the phase's requests (Cutout only). */
  inferenceMedian?: number;
  queueMedian?: number;
  /** Median of every Server-Timing stage over the phase's requests (Cutout only). */
  stages?: StageMedians;
  /** GET /healthz latencies during the phase (Cutout only). */
  health?: { count: number; failures: number; p50: number; p95: number; p99: number; max: number };
  /** VmHWM of the phase (reset before it) and the largest sampled VmRSS, bytes. */
  peakRss?: number;
  sampledMaxRss?: number;
  errors: string[];
  /** Cores other people's processes used, on average, during the phase. */
  foreignCores: number;
  /**
   * Bare model passes (ms) taken in the bench process just before this level and just after
   * it, the server idle (Cutout only): this level's own "inference alone", for its throughput.
   */
  barePasses?: number[];
}

export interface ModelArithmeticResult {
  /** The model file measured (what assembleModel gives the server), relative to the repository. */
  path: string;
  bytes?: number;
  convolutions: number;
  convTransposes: number;
  /** Multiply-accumulates of one pass at the model's input size. */
  macs: number;
  byBlock: { block: string; convolutions: number; macs: number }[];
  /** Shapes are measured by running the model; how they compare with the file and the formula. */
  shapeCheck: {
    runtimeMacs: number;
    /** The count from the shapes recorded in the file (value_info), when it records them all. */
    recordedMacs?: number;
    /** Convolutions whose measured output differs from the Conv formula on the measured input. */
    formulaMismatches: string[];
    /** Convolutions whose measured output differs from the recorded one. */
    recordedMismatches: string[];
  };
}

export interface TargetResult {
  name: string;
  target: string;
  measured: string;
  pass: boolean | undefined;
}

/** Everything one run measured; written as JSON by --out. */
export interface BenchResults {
  startedAt: string;
  durationS: number;
  command: string;
  machine: MachineInfo;
  loadAverageAfter: number[];
  options: Record<string, unknown>;
  /**
   * The server's default quality (CUTOUT_QUALITY) and every quality the run measured, the
   * default first; when `auto` was measured, its looks on the photo at each size (by label).
   */
  qualities: { serverDefault: Quality; measured: Quality[]; autoLooks?: Record<string, 1 | 2> };
  versions: Record<string, string>;
  threads: number;
  model: ModelArithmeticResult;
  /** Every bare model pass of the run: before the server starts, beside the single requests, after the load. */
  floor: Timed & { before: Timed & { foreignCores: number }; interleaved: Timed; after: Timed & { foreignCores: number }; gflops: number };
  /** Bare passes of the model file as the package ships it, when the server runs a rewrite of it. */
  shippedModel?: Timed & { path: string };
  matmul: MatMulReference & { foreignCores: number };
  endToEnd: EndToEndResult[];
  load: { image: ImageInfo; cutout: LoadPhaseResult[]; peer: LoadPhaseResult[] };
  memory?: { image: ImageInfo } & LoadPhaseResult;
  /** VmRSS of the server once ready (model loaded and warmed up), bytes. */
  serverRssReady?: number;
  /** VmHWM of the server over the whole run, bytes (the largest of the phases' peaks). */
  serverPeakRss: number;
  peerPeakRss?: number;
  /** Which form of the model the server and the bare passes ran, and why (fp32 or int8). */
  precision?: { setting: string; chosen: string; reason: string };
  /**
   * The float32 model on a second server in the same run (--fp32-baseline, when the run is
   * int8): once ready, at 8 clients, and with the memory burst, to compare int8 with float32.
   */
  fp32Baseline?: { rssReady?: number; at8?: LoadPhaseResult; memory?: LoadPhaseResult };
  targets: TargetResult[];
}
