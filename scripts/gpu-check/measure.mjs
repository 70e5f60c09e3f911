// The GPU check's measurement (run.sh starts it with the unpacked Node): Cutout end to end on
// one host, on WebGPU and on the CPU alone, one after the other, under the same load: N
// clients sending the same ~0.7 MP JPEG to the base64 endpoint for S seconds each. Prints
// images/s, latencies and /readyz (provider, precision, pass time at start) for each, and the
// ratios; writes them to gpu-check-results.json. Plain JavaScript: no npm and no tsx there.
//
//   node measure.mjs --cutout DIR --node PATH [--clients 16] [--seconds 60] [--runs webgpu,cpu,cpu-2]
//
// Runs: `webgpu` (CUTOUT_EXECUTION_PROVIDER=webgpu, one session: the GPU runs one pass at a
// time), `cpu` (every core), `cpu-2` (two cores, with taskset: the scaling target's baseline).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    cutout: { type: 'string' },
    node: { type: 'string', default: process.execPath },
    clients: { type: 'string', default: '16' },
    seconds: { type: 'string', default: '60' },
    runs: { type: 'string', default: 'webgpu,cpu,cpu-2' },
    megapixels: { type: 'string', default: '0.7' },
  },
});
if (!values.cutout) throw new Error('measure.mjs needs --cutout DIR (the unpacked Cutout)');
const cutout = values.cutout;
const clients = Number(values.clients);
const seconds = Number(values.seconds);
const sharp = createRequire(join(cutout, 'package.json'))('sharp');

/** A photo with a subject: a lit disc and a bar on a graded background, as a JPEG of about `megapixels`. */
async function photo(megapixels) {
  const height = Math.round(Math.sqrt((megapixels * 1e6 * 3) / 4));
  const width = Math.round((height * 4) / 3);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#9bb"/><stop offset="1" stop-color="#dcb"/></linearGradient>
    <radialGradient id="s" cx="0.4" cy="0.35" r="0.7"><stop offset="0" stop-color="#f84"/><stop offset="1" stop-color="#a31"/></radialGradient></defs>
    <rect width="100%" height="100%" fill="url(#g)"/>
    <circle cx="${width / 2}" cy="${height * 0.45}" r="${height * 0.28}" fill="url(#s)"/>
    <rect x="${width * 0.46}" y="${height * 0.7}" width="${width * 0.08}" height="${height * 0.28}" fill="#532"/></svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 90 }).toBuffer();
}

const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts Cutout on a fresh data directory; resolves once /readyz answers 200, with a managed token. */
async function startCutout(run, port) {
  const dataDir = mkdtempSync(join(tmpdir(), `gpu-check-${run}-`));
  const env = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    CUTOUT_DATA_DIR: dataDir,
    CUTOUT_QUEUE_MAX: String(clients * 2),
    CUTOUT_REQUEST_TIMEOUT_MS: '120000',
    CUTOUT_RATE_LIMIT: '0',
    LOG_LEVEL: 'warn',
    MALLOC_ARENA_MAX: '2',
    MALLOC_MMAP_THRESHOLD_: '4194304',
    CUTOUT_EXECUTION_PROVIDER: run === 'webgpu' ? 'webgpu' : 'cpu',
    ...(run === 'webgpu' ? { CUTOUT_INFERENCE_CONCURRENCY: '1' } : {}),
    ...(run === 'cpu-2' ? { CUTOUT_INFERENCE_THREADS: '2' } : {}),
  };
  const created = spawnSync(values.node, [join(cutout, 'bin', 'cutout.js'), 'tokens', 'create', '--name', 'gpu-check'], { env, encoding: 'utf8' });
  if (created.status !== 0) throw new Error(`cutout tokens create failed: ${created.stderr}`);
  const tokenId = created.stdout.trim().split('\n').pop();
  const command = run === 'cpu-2' ? ['taskset', ['-c', '0,1', values.node, join(cutout, 'dist', 'start.cjs')]] : [values.node, [join(cutout, 'dist', 'start.cjs')]];
  const child = spawn(command[0], command[1], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  const origin = `http://127.0.0.1:${port}`;
  const started = performance.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Cutout (${run}) exited with code ${child.exitCode} while starting`);
    const ready = await fetch(`${origin}/readyz`).catch(() => undefined);
    if (ready?.status === 200) {
      const readyz = await ready.json();
      const exchange = await fetch(`${origin}/api/v1/auth/token`, { method: 'POST', headers: { token: tokenId } });
      const { managed_token: token } = await exchange.json();
      return { child, origin, token, readyz, startSeconds: (performance.now() - started) / 1000 };
    }
    await ready?.arrayBuffer();
    if (performance.now() - started > 20 * 60_000) throw new Error(`Cutout (${run}) not ready after 20 minutes`);
    await wait(250);
  }
}

/** The sums over every label of the metrics named, from /metrics' text. */
async function metricSums(origin, names) {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const sums = Object.fromEntries(names.map((name) => [name, 0]));
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(?:\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
    if (match && match[1] in sums) sums[match[1]] += Number(match[2]);
  }
  return sums;
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** `clients` clients sending `body` back to back for `seconds`: images/s and latencies of the 200s. */
async function load(origin, token, body) {
  const send = async () => {
    const started = performance.now();
    const answer = await fetch(`${origin}/api/v1/background/remove/base64`, {
      method: 'POST',
      headers: { authorization: token, 'content-type': 'application/json', accept: 'image/png' },
      body,
    });
    await answer.arrayBuffer();
    return { status: answer.status, ms: performance.now() - started };
  };
  for (let i = 0; i < 2; i++) await send(); // warm: the first answers pay for lazy starts
  const MODEL_METRICS = ['cutout_model_passes_total', 'cutout_inference_seconds_sum'];
  const before = await metricSums(origin, MODEL_METRICS);
  const latencies = [];
  const failures = {};
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        const { status, ms } = await send().catch(() => ({ status: 0, ms: 0 }));
        if (status === 200) latencies.push(ms);
        else failures[status] = (failures[status] ?? 0) + 1;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const after = await metricSums(origin, MODEL_METRICS);
  latencies.sort((a, b) => a - b);
  const passes = after.cutout_model_passes_total - before.cutout_model_passes_total;
  return {
    imagesPerSecond: latencies.length / elapsed,
    images: latencies.length,
    p50Ms: percentile(latencies, 50),
    p95Ms: percentile(latencies, 95),
    failures,
    passes,
    // The share of the run's time the model's sessions held a photo (its tensor filled, the
    // pass, the mask made, the hops between threads), over the sessions: near 1 when photos
    // always waited for the model.
    modelStepShare: (after.cutout_inference_seconds_sum - before.cutout_inference_seconds_sum) / elapsed,
    elapsed,
  };
}

const bytes = await photo(Number(values.megapixels));
const body = JSON.stringify({ image_base64: bytes.toString('base64') });
const machine = { cpu: cpus()[0]?.model, cores: availableParallelism(), node: process.version, clients, seconds };
console.log(JSON.stringify(machine));
const results = {};
let port = 18_080;
for (const run of values.runs.split(',')) {
  const server = await startCutout(run, port++);
  try {
    const { provider, precision, passMs } = server.readyz;
    console.log(`${run}: ready in ${server.startSeconds.toFixed(1)} s on ${provider} (${precision}), pass at start ${passMs} ms; ${clients} clients for ${seconds} s…`);
    results[run] = { readyz: server.readyz, startSeconds: server.startSeconds, ...(await load(server.origin, server.token, body)) };
    const r = results[run];
    // The passes' share of the run at the pass time measured at start (off the CPU the second,
    // warm pass; on the CPU the first, so not shown): how busy the GPU was, below
    // modelStepShare by the work its session's thread did around each pass.
    r.passShare = passMs && provider !== 'cpu' ? (r.passes * passMs) / 1000 / r.elapsed : undefined;
    console.log(`${run}: ${r.imagesPerSecond.toFixed(2)} images/s, p50 ${r.p50Ms?.toFixed(0)} ms, p95 ${r.p95Ms?.toFixed(0)} ms, failures ${JSON.stringify(r.failures)}`);
    console.log(`${run}: ${r.passes} passes (${(r.passes / r.images).toFixed(2)} an image); sessions held photos ${(r.modelStepShare * 100).toFixed(0)} % of the time, passes at the start pass time ${r.passShare === undefined ? '?' : (r.passShare * 100).toFixed(0)} %`);
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((resolve) => server.child.once('exit', resolve));
  }
}
const ratio = (a, b) => (results[a] && results[b] ? results[a].imagesPerSecond / results[b].imagesPerSecond : undefined);
const ratios = { webgpuOverCpu: ratio('webgpu', 'cpu'), cpuOverCpu2: ratio('cpu', 'cpu-2') };
console.log(JSON.stringify(ratios));
writeFileSync('gpu-check-results.json', `${JSON.stringify({ machine, results, ratios }, null, 2)}\n`);
