import http from 'node:http';
import { HealthProbe, requestRemoval, runClosedLoop, type CutoutTarget, type LoadResult, type RequestSample } from './http-load.js';
import type { CpuAccount } from './cpu-account.js';
import type { BenchImage } from './inputs.js';
import type { PeerWorker } from './peer.js';
import { readProcessMemory, resetPeakRss, RssSampler } from '../lib/process-memory.js';
import { stageMedians } from './end-to-end.js';
import type { LoadPhaseResult } from './results.js';
import { median, percentile } from './stats.js';
import type { Quality } from '../../src/pipeline/views.js';

/** One concurrency level and its bounds. */
export interface LoadLevel {
  clients: number;
  maxRequests: number;
  maxMs: number;
  /** The `quality` Cutout's requests send; without one, the server's default answers (the peer has none). */
  quality?: Quality;
}

/**
 * Follows one process's memory across phases: each phase's own peak (VmHWM reset before it),
 * sampled RSS as a second opinion, and the peak over the whole run.
 */
export class PeakTracker {
  readonly #pid: number;
  #overall = 0;

  constructor(pid: number) {
    this.#pid = pid;
  }

  /** The largest VmHWM seen so far, including the one read now. */
  get overall(): number {
    this.#overall = Math.max(this.#overall, readProcessMemory(this.#pid)?.peak ?? 0);
    return this.#overall;
  }

  /** Runs `phase` with its memory watched; returns its peak and largest sampled RSS. */
  async watch<T>(phase: () => Promise<T>): Promise<{ value: T; peakRss?: number; sampledMaxRss: number }> {
    void this.overall;
    const reset = resetPeakRss(this.#pid);
    const sampler = new RssSampler(this.#pid);
    try {
      const value = await phase();
      const peak = readProcessMemory(this.#pid)?.peak ?? 0;
      this.#overall = Math.max(this.#overall, peak);
      return { value, peakRss: reset ? peak : undefined, sampledMaxRss: sampler.stop().maxRss };
    } finally {
      sampler.stop();
    }
  }
}

const errorsOf = (samples: RequestSample[]) => [...new Set(samples.filter((s) => !s.ok).map((s) => s.error ?? `status ${s.status}`))].slice(0, 5);
const withoutSamples = ({ samples: _samples, ...rest }: LoadResult) => rest;

/**
 * Cutout under `clients` closed-loop clients per level, all sending the same image to the
 * base64 endpoint (with the level's `quality`), with GET /healthz probed on its own
 * connection and the server's memory watched.
 */
export async function measureCutoutLoad(
  server: CutoutTarget & { pid: number },
  image: BenchImage,
  levels: LoadLevel[],
  watch: { memory: PeakTracker; cpu: CpuAccount },
  log: (line: string) => void,
  barePasses?: () => Promise<number[]>,
): Promise<LoadPhaseResult[]> {
  const results: LoadPhaseResult[] = [];
  // Passes before each level and after the last: on a machine whose speed drifts, a level's
  // throughput is judged against the passes around it, not against the run's other phases.
  const passesBefore: number[][] = [];
  for (const level of levels) {
    if (barePasses) passesBefore.push(await barePasses());
    const agent = new http.Agent({ keepAlive: true, maxSockets: level.clients });
    const probe = new HealthProbe(server.baseUrl);
    const body = level.quality ? image.qualityJsonBodies[level.quality] : image.jsonBody;
    const { value: watched, foreignCores } = await watch.cpu.measure(() =>
      watch.memory.watch(() => runClosedLoop({ ...level, send: async () => (await requestRemoval(server, body, agent)).sample })),
    );
    const health = await probe.stop();
    agent.destroy();
    const load = watched.value;
    const timed = load.samples.filter((s) => s.timings);
    const result: LoadPhaseResult = {
      ...withoutSamples(load),
      quality: level.quality,
      inferenceMedian: median(timed.map((s) => s.timings!.inference)),
      queueMedian: median(timed.map((s) => s.timings!.queue)),
      stages: stageMedians(load.samples.filter((s) => s.ok)),
      health: {
        count: health.latencies.length,
        failures: health.failures,
        p50: percentile(health.latencies, 50),
        p95: percentile(health.latencies, 95),
        p99: percentile(health.latencies, 99),
        max: percentile(health.latencies, 100),
      },
      peakRss: watched.peakRss,
      sampledMaxRss: watched.sampledMaxRss,
      errors: errorsOf(load.samples),
      foreignCores,
    };
    results.push(result);
    log(
      `  ${image.label} × ${level.clients} clients${level.quality ? `, ${level.quality}` : ''}: ${load.requests} requests, ${load.failures} failed, ${load.throughput.toFixed(3)} req/s, ` +
        `p50 ${load.latency.p50.toFixed(0)} ms, p99 ${load.latency.p99.toFixed(0)} ms, /healthz p99 ${result.health!.p99.toFixed(1)} ms, ` +
        `peak RSS ${((watched.peakRss ?? watched.sampledMaxRss) / 2 ** 20).toFixed(0)} MiB; other processes ${foreignCores.toFixed(2)} cores` +
        (barePasses ? `; bare passes before it ${passesBefore.at(-1)!.map((ms) => ms.toFixed(0)).join(', ')} ms` : ''),
    );
  }
  if (barePasses) {
    passesBefore.push(await barePasses());
    results.forEach((result, i) => (result.barePasses = [...passesBefore[i], ...passesBefore[i + 1]]));
  }
  return results;
}

/** The peer under the same closed loop: `clients` overlapping removeBackground calls in its process. */
export async function measurePeerLoad(
  peer: PeerWorker,
  image: BenchImage,
  levels: LoadLevel[],
  watch: { memory: PeakTracker; cpu: CpuAccount },
  log: (line: string) => void,
): Promise<LoadPhaseResult[]> {
  await peer.load(image);
  const results: LoadPhaseResult[] = [];
  for (const level of levels) {
    const { value: watched, foreignCores } = await watch.cpu.measure(() => watch.memory.watch(() => runClosedLoop({ ...level, send: () => peer.remove(image) })));
    const load = watched.value;
    results.push({ ...withoutSamples(load), peakRss: watched.peakRss, sampledMaxRss: watched.sampledMaxRss, errors: errorsOf(load.samples), foreignCores });
    log(
      `  peer ${image.label} × ${level.clients} clients: ${load.requests} calls, ${load.failures} failed, ${load.throughput.toFixed(3)} calls/s, ` +
        `p50 ${load.latency.p50.toFixed(0)} ms, p99 ${load.latency.p99.toFixed(0)} ms; other processes ${foreignCores.toFixed(2)} cores`,
    );
  }
  return results;
}
