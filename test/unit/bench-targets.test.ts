import { describe, expect, it } from 'vitest';
import type { BenchResults, EndToEndResult, LoadPhaseResult, QualityLatency, StageMedians } from '../../scripts/bench/results.js';
import { judgeTargets } from '../../scripts/bench/targets.js';
import type { Quality } from '../../src/pipeline/views.js';

const STAGES: StageMedians = { decode: 0, preprocess: 0, queue: 0, inference: 0, postprocess: 0, refine: 0, compose: 0, encode: 0, other: 0 };
const FLOOR_MS = 200;

const answer = (quality: Quality, median: number): QualityLatency => ({ quality, samples: [], median, stages: STAGES, ratioToFloor: median / FLOOR_MS });

const level = (quality: Quality, throughput: number, failures = 0): LoadPhaseResult => ({
  quality,
  clients: 8,
  requests: 24,
  failures,
  wallMs: 10_000,
  throughput,
  latency: { p50: 0, p95: 0, p99: 0, max: 0 },
  health: { count: 100, failures: 0, p50: 1, p95: 2, p99: 3, max: 4 },
  errors: [],
  foreignCores: 0,
  barePasses: [FLOOR_MS],
});

/** A run at one size: the default (best) and fast answers' medians, the peer's, and both 8-client levels. */
function run(figures: { best: number; fast: number; peer: number; bestRps: number; fastRps: number; fastFailures?: number }): Omit<BenchResults, 'targets'> {
  const entry: EndToEndResult = {
    image: { label: '2.5 MP', width: 1827, height: 1369, megapixels: 2.5, jpegBytes: 1 },
    floor: { samples: [FLOOR_MS], median: FLOOR_MS },
    foreignCores: 0,
    cutout: answer('best', figures.best),
    otherQualities: [answer('fast', figures.fast)],
    peer: { samples: [figures.peer], median: figures.peer, ratioToCutout: figures.peer / figures.best },
  };
  return {
    startedAt: '',
    durationS: 0,
    command: '',
    machine: { cpu: '', cores: 2, memoryGiB: 1, loadAverage: [0, 0, 0], node: '', kernel: '' },
    loadAverageAfter: [0, 0, 0],
    options: {},
    qualities: { serverDefault: 'best', measured: ['best', 'fast'] },
    versions: {},
    threads: 2,
    model: { path: '', convolutions: 0, convTransposes: 0, macs: 0, byBlock: [], shapeCheck: { runtimeMacs: 0, formulaMismatches: [], recordedMismatches: [] } },
    floor: { samples: [], median: FLOOR_MS, before: { samples: [], median: FLOOR_MS, foreignCores: 0 }, interleaved: { samples: [], median: FLOOR_MS }, after: { samples: [], median: FLOOR_MS, foreignCores: 0 }, gflops: 0 },
    matmul: { n: 0, gflop: 0, gflops: 0, samples: [], median: 0, foreignCores: 0 },
    endToEnd: [entry],
    load: { image: entry.image, cutout: [level('best', figures.bestRps), level('fast', figures.fastRps, figures.fastFailures)], peer: [] },
    serverPeakRss: 0,
    precision: { setting: 'auto', chosen: 'int8', reason: '' },
  };
}

const verdict = (results: Omit<BenchResults, 'targets'>, name: string) => judgeTargets(results).find((t) => t.name === name)?.pass;

/** The same run with `auto` measured too, at a size of `megapixels`. */
function withAuto(results: Omit<BenchResults, 'targets'>, autoMs: number, megapixels: number): Omit<BenchResults, 'targets'> {
  const [entry] = results.endToEnd;
  const image = { ...entry.image, label: `${megapixels} MP`, megapixels };
  return { ...results, endToEnd: [{ ...entry, image, otherQualities: [...entry.otherQualities, answer('auto', autoMs)] }] };
}

describe('the bench targets of the qualities', () => {
  it('asks 5 × the peer of best and 9 × of fast with the int8 model', () => {
    // best 5.5 ×, fast 5.5 ×: best passes, fast does not.
    const results = run({ best: 1000, fast: 1000, peer: 5500, bestRps: 2, fastRps: 4 });
    expect(verdict(results, 'faster than the peer at 2.5 MP, best (the default)')).toBe(true);
    expect(verdict(results, 'faster than the peer at 2.5 MP, fast')).toBe(false);
    expect(verdict(run({ best: 1000, fast: 600, peer: 5500, bestRps: 2, fastRps: 4 }), 'faster than the peer at 2.5 MP, fast')).toBe(true);
    expect(verdict(run({ best: 1000, fast: 620, peer: 5500, bestRps: 2, fastRps: 4 }), 'faster than the peer at 2.5 MP, fast')).toBe(false);
    expect(verdict(run({ best: 1200, fast: 900, peer: 5500, bestRps: 2, fastRps: 4 }), 'faster than the peer at 2.5 MP, best (the default)')).toBe(false);
  });

  it('asks 7 × the peer of auto at 0.7 MP and 12 × from 2.5 MP', () => {
    const base = run({ best: 1000, fast: 600, peer: 5500, bestRps: 2, fastRps: 4 });
    expect(verdict(withAuto(base, 780, 0.7), 'faster than the peer at 0.7 MP, auto')).toBe(true);
    expect(verdict(withAuto(base, 800, 0.7), 'faster than the peer at 0.7 MP, auto')).toBe(false);
    expect(verdict(withAuto(base, 455, 2.5), 'faster than the peer at 2.5 MP, auto')).toBe(true);
    expect(verdict(withAuto(base, 460, 2.5), 'faster than the peer at 2.5 MP, auto')).toBe(false);
  });

  it('asks best at 8 clients for 0.45 × the throughput of fast, without failures', () => {
    const name = 'throughput at 8 clients, best against fast';
    expect(verdict(run({ best: 1, fast: 1, peer: 1, bestRps: 1.8, fastRps: 4 }), name)).toBe(true);
    expect(verdict(run({ best: 1, fast: 1, peer: 1, bestRps: 1.79, fastRps: 4 }), name)).toBe(false);
    expect(verdict(run({ best: 1, fast: 1, peer: 1, bestRps: 1.8, fastRps: 4, fastFailures: 1 }), name)).toBe(false);
  });

  it('judges the one-pass targets on fast: throughput against one bare pass, end to end against it', () => {
    // 4.5 req/s = 90 % of 1 / 200 ms; best's 2 req/s would fail it.
    expect(verdict(run({ best: 1, fast: 1, peer: 1, bestRps: 2, fastRps: 4.5 }), 'throughput at 8 clients, fast')).toBe(true);
    expect(verdict(run({ best: 1, fast: 1, peer: 1, bestRps: 2, fastRps: 4.4 }), 'throughput at 8 clients, fast')).toBe(false);
    expect(verdict(run({ best: 430, fast: 215, peer: 1, bestRps: 2, fastRps: 4.5 }), 'end-to-end at 2.5 MP')).toBe(true);
  });
});
