/**
 * `npx tsx scripts/probes/metrics-cost.ts`: what Prometheus metrics add to a request
 * (the aim: no cost on the request path beyond a few microseconds). Two measures:
 *
 * 1. the metrics' own work per removal answered 200, alone: one counter increment and three
 *    histogram observations (CutoutMetrics.countRequest + observeRemoval), in µs;
 * 2. whole requests through Fastify (`app.inject`, GET /healthz, which touches neither the
 *    model nor the store), with CUTOUT_METRICS=true and false, one of each in turn: the
 *    difference of the medians per request, in µs. A small answer on purpose: under
 *    `app.inject` (not over HTTP) the heap keeps about twice each answer's size, so 40,000
 *    answers of the 100 KB OpenAPI document run out of memory before the end.
 *
 * A removal takes a second or more (docs/benchmarks.md); docs/internals/replicas.md keeps the figures.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/create-services.js';
import { CutoutMetrics } from '../../src/metrics/cutout-metrics.js';
import { ModelService } from '../../src/model/model-service.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { median } from '../bench/stats.js';

const counts = { queued: 0, running: 0, passes: 0 };
const metrics = new CutoutMetrics(counts);
const N = 200_000;
const alone: number[] = [];
for (let round = 0; round < 5; round++) {
  const started = performance.now();
  for (let i = 0; i < N; i++) {
    metrics.countRequest('POST', '/api/v1/background/remove/base64', 'ok');
    metrics.observeRemoval({ queue: (i % 3000) + 1, inference: 1500 + (i % 400), model: 'isnet' }, 1.8 + (i % 10) / 10);
  }
  alone.push(((performance.now() - started) * 1000) / N);
}
console.log(`metrics' own work per removal: ${median(alone).toFixed(2)} µs (median of 5 rounds of ${N}; rounds ${alone.map((v) => v.toFixed(2)).join(', ')})`);

const never = { size: 1024, segment: () => Promise.reject(new Error('no model in this probe')), close: async () => {} };
async function appWith(metricsOn: boolean) {
  const dataDir = await mkdtemp(join(tmpdir(), 'cutout-metrics-cost-'));
  const config = loadConfig({ CUTOUT_METRICS: String(metricsOn) }, { dataDir, logLevel: 'silent' });
  const store = await openSqliteStore(dataDir);
  const { services, close } = createServices(config, store, { model: ModelService.ofSegmenter(never) });
  const app = await buildApp(services);
  return {
    app,
    async close() {
      await app.close();
      await store.close();
      await close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
const on = await appWith(true);
const off = await appWith(false);
// One request with metrics, one without, in turn, each timed alone: the machine's drift
// (other processes, GC) falls on both alike; the medians of each side are compared.
const REQUESTS = 20_000;
const perRequest = { on: [] as number[], off: [] as number[] };
for (let i = 0; i < REQUESTS + 1000; i++) {
  for (const [name, t] of [['on', on], ['off', off]] as const) {
    const started = performance.now();
    await t.app.inject({ method: 'GET', url: '/healthz' });
    if (i >= 1000) perRequest[name].push((performance.now() - started) * 1000);
  }
}
await on.close();
await off.close();
console.log(
  `a whole request through Fastify (inject, GET /healthz): median ${median(perRequest.on).toFixed(1)} µs with metrics, ${median(perRequest.off).toFixed(1)} µs without: ` +
    `${(median(perRequest.on) - median(perRequest.off)).toFixed(1)} µs (medians of ${REQUESTS} each, taken in turn)`,
);
