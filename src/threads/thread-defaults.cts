/** How many threads of each kind a host of some number of cores starts by default. */
export interface ThreadDefaults {
  /** Model sessions, each on its own thread (CUTOUT_INFERENCE_CONCURRENCY): the passes in flight at once. */
  inferenceSessions: number;
  /** Threads ONNX Runtime uses inside one session's pass (CUTOUT_INFERENCE_THREADS). */
  inferenceThreads: number;
  /** Finish threads (CUTOUT_FINISH_THREADS): full-size decode, refine, compose and encode. */
  finishThreads: number;
  /** HEIC/HEIF photos decoded at once, each on a thread of its own (`heic-thread.ts`). */
  heicThreads: number;
  /**
   * libuv's thread pool (UV_THREADPOOL_SIZE, set by `start.cts` before the pool starts): every
   * sharp decode, resize and encode of the process, from the main thread and from every
   * finish thread, runs on one of these.
   */
  libuvThreads: number;
}

/** The cores shared out among `sessions`, at least one thread each. */
const threadsPerSession = (cores: number, sessions: number) => Math.max(1, Math.floor(cores / sessions));

/** The most model sessions a default starts: past it, more cores go to each session's threads. */
export const MAX_DEFAULT_SESSIONS = 8;

/**
 * The threads a host with `cores` cores starts unless told otherwise: a pure function of the
 * core count (config.ts passes `os.availableParallelism()`), so that 2 cores, where every
 * figure of the benchmarks was taken, keep one 2-thread session, one finish thread and two
 * HEIC threads, and a larger host spreads the same work over its cores.
 *
 * - On the CPU, the model runs as sessions of 2 threads, `⌊cores / 2⌋` of them up to
 *   {@link MAX_DEFAULT_SESSIONS}, and each session takes `⌊cores / sessions⌋` threads. ONNX
 *   Runtime's passes scale across sessions much better than across one session's threads
 *   (on a 16-core host, int8 IS-Net: 1.83 passes/s for one 2-thread session, 11.15 for
 *   eight; the reasoning is in bench/results/finish-pool-defaults.txt), and each session costs
 *   the memory of its arena, hence the cap.
 * - Where the model may run on a GPU (`gpu`), one session with every core, as before: the
 *   GPU runs one pass at a time, and a second session only costs memory.
 * - The finish threads are half the cores (at least one): on a GPU host they are the work
 *   between passes, and the other half decodes the photos to the model's size, serves HTTP
 *   and feeds the GPU.
 * - The HEIC threads are half the cores, at least two.
 * - libuv's pool has a thread a core, at least libuv's own 4: sharp's operations each take
 *   one of its threads, and libvips works on one thread an image here (sharp's default on
 *   glibc without jemalloc), so with libuv's 4 a 16-core host would decode and encode four
 *   images at a time, whatever its finish threads.
 *
 * @example threadDefaults(16) // { inferenceSessions: 8, inferenceThreads: 2, finishThreads: 8, heicThreads: 8, libuvThreads: 16 }
 */
export function threadDefaults(cores: number, { gpu = false }: { gpu?: boolean } = {}): ThreadDefaults {
  const count = Math.max(1, Math.floor(cores));
  const inferenceSessions = gpu ? 1 : Math.min(MAX_DEFAULT_SESSIONS, Math.max(1, Math.floor(count / 2)));
  return {
    inferenceSessions,
    inferenceThreads: threadsPerSession(count, inferenceSessions),
    finishThreads: Math.max(1, Math.floor(count / 2)),
    heicThreads: Math.max(2, Math.floor(count / 2)),
    libuvThreads: Math.max(4, count),
  };
}

/** The model's threads as configured: each count given, or left to the host's default. */
export interface ModelThreadsSetting {
  /** The execution provider setting (CUTOUT_EXECUTION_PROVIDER). */
  provider: string;
  /** CUTOUT_INFERENCE_CONCURRENCY, when given. */
  sessions?: number;
  /** CUTOUT_INFERENCE_THREADS, when given. */
  threads?: number;
}

/**
 * The model sessions and each one's threads on a host of `cores` cores, for the provider the
 * operator chose: the GPU defaults (one session of every core) only where the model may run on
 * a GPU, that is a GPU provider named, or `auto` on a host whose files show a hardware GPU
 * (`hardwareGpu`, called only then: vulkan-drivers.ts's look); `cpu` always gets the CPU's
 * sessions, whatever the host has. Threads left to the default share the cores among the
 * sessions in effect, given or not.
 *
 * @example modelThreads(16, { provider: 'cpu', sessions: 4 }, () => true) // { sessions: 4, threads: 4 }
 */
export function modelThreads(cores: number, setting: ModelThreadsSetting, hardwareGpu: () => boolean): { sessions: number; threads: number } {
  const gpu = setting.provider === 'auto' ? hardwareGpu() : setting.provider !== 'cpu';
  const count = Math.max(1, Math.floor(cores));
  const sessions = setting.sessions ?? threadDefaults(count, { gpu }).inferenceSessions;
  return { sessions, threads: setting.threads ?? threadsPerSession(count, sessions) };
}
