/**
 * Cutout's speed benchmark: the model's arithmetic and floor, end-to-end latency
 * through HTTP per stage and per quality, the peer (@imgly/background-removal-node) on the
 * same photos, throughput and latency under concurrent clients, /healthz during load, and
 * peak memory.
 *
 *   npm run bench -- [--quick] [--skip-peer] [--sizes 0.7,2.5,10.7] [--concurrency 1,2,4,8,16]
 *                    [--qualities best,fast] [--runs N] [--out FILE.json] [--photo FILE]
 *
 * It compiles src/ into bench/.build, starts that server as a child process on a free
 * loopback port with a fresh data directory (the assembled model linked in from ./data),
 * and prints a Markdown report; docs/benchmarks.md records one. Only 127.0.0.1 is contacted.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { assembleModel } from '../src/model/assemble-model.js';
import { BUNDLED_RANGES, buildInt8Model } from '../src/model/int8-model.js';
import { decidePrecision, runPrecisionProbe } from '../src/model/precision.js';
import { decodeForModel } from '../src/pipeline/decode.js';
import { QUALITIES, QUALITY_VIEWS, type Quality } from '../src/pipeline/views.js';
import { ISNET_PROCESSING } from '../src/model/model-processing.js';
import { channelTables, toModelTensor } from '../src/model/model-tensor.js';
import { renderLoadChart } from './bench/chart.js';
import { CpuAccount } from './bench/cpu-account.js';
import { imageInfo, measureEndToEnd } from './bench/end-to-end.js';
import { autoLooksOf } from './bench/auto-looks.js';
import { makeBenchImages, type BenchImage } from './bench/inputs.js';
import { measureCutoutLoad, measurePeerLoad, PeakTracker, type LoadLevel } from './bench/load-phases.js';
import { describeMachine } from './bench/machine.js';
import { measureModelArithmetic } from './bench/model-arithmetic.js';
import { measureMatMul, measurePasses, measureTensorShapes, openFloorMeter } from './bench/onnx-reference.js';
import { PEER_ENV, PeerWorker } from './bench/peer.js';
import { readProcessMemory } from './lib/process-memory.js';
import { renderReport } from './bench/report.js';
import type { BenchResults } from './bench/results.js';
import { compileServer, startCutoutServer, startScriptEnvironment, type CutoutServer } from './lib/server-process.js';
import { median } from './bench/stats.js';
import { judgeTargets } from './bench/targets.js';

const USAGE = `usage: npm run bench -- [options]

  --quick               fewer runs and requests: a smoke test of every phase (~5 min)
  --skip-peer           do not run @imgly/background-removal-node (bench/peer)
  --sizes LIST          photo sizes in megapixels (default 0.7,2.5,10.7)
  --concurrency LIST    concurrent clients of the load phases (default 1,2,4,8,16; quick 1,8)
  --qualities LIST      the qualities to measure (default: the server's default, CUTOUT_QUALITY,
                        and fast): each in every end-to-end round, and each at 8 clients right
                        after the server's default (which the list must hold; the other levels
                        and the memory burst send the default). The default is asked for as a
                        client that does not choose asks, without a \`quality\` field
  --runs N              single-request runs per size, and model passes for the floor (default 5; quick 2)
  --out FILE.json       write every figure as JSON, and the chart as FILE.svg beside it
  --photo FILE          the photo to scale (default ../shared/fixtures/photos/animal-3.jpg)
  --fp32-baseline       when the model runs in int8: also start a float32 server after the
                        peer phase and measure its idle memory, 8 clients and the memory burst

  CUTOUT_MODEL_PRECISION (default auto) chooses the model of the server and of the bare
  passes alike: auto is resolved once, by the server's own probe (src/model/precision.ts),
  here, and the server is started with the result.

  The peer is installed once with: (cd bench/peer && npm install --ignore-scripts)`;

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MAX_PIXELS = 50_000_000;
/** Bare passes before each load level and after the last: each level's own reference for throughput. */
const PASSES_AROUND_LEVELS = 3;

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'skip-peer': { type: 'boolean', default: false },
    sizes: { type: 'string', default: '0.7,2.5,10.7' },
    concurrency: { type: 'string' },
    qualities: { type: 'string' },
    runs: { type: 'string' },
    out: { type: 'string' },
    photo: { type: 'string', default: join(ROOT, '../shared/fixtures/photos/animal-3.jpg') },
    'fp32-baseline': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}

const numbers = (list: string, name: string) => {
  const parsed = list.split(',').map((v) => Number(v.trim()));
  if (parsed.length === 0 || parsed.some((v) => !(v > 0))) throw new Error(`--${name} takes positive numbers separated by commas, not ${JSON.stringify(list)}`);
  return parsed;
};
const quick = args.quick;
const sizes = numbers(args.sizes, 'sizes');
const concurrency = numbers(args.concurrency ?? (quick ? '1,8' : '1,2,4,8,16'), 'concurrency').map(Math.round);
const runs = Math.round(numbers(args.runs ?? (quick ? '2' : '5'), 'runs')[0]);
const threads = Number(process.env.CUTOUT_INFERENCE_THREADS) || availableParallelism();
// The bare passes run with the server's session options, CUTOUT_INFERENCE_MEMORY_* included.
const serverConfig = loadConfig(process.env);
const segmenterOptions = { threads, memoryArena: serverConfig.inferenceMemoryArena, memoryPattern: serverConfig.inferenceMemoryPattern };
const skipPeer = args['skip-peer'];
/** The qualities to measure, the server's default first: its answer is "the default answer". */
const qualities = (() => {
  const serverDefault = serverConfig.quality;
  const listed = [...new Set((args.qualities ?? `${serverDefault},fast`).split(',').map((v) => v.trim()))];
  const unknown = listed.filter((v) => !(QUALITIES as readonly string[]).includes(v));
  if (listed.length === 0 || unknown.length) throw new Error(`--qualities takes ${QUALITIES.join(', ')} separated by commas, not ${JSON.stringify(args.qualities)}`);
  if (!listed.includes(serverDefault)) throw new Error(`--qualities must include the server's default, ${serverDefault} (CUTOUT_QUALITY): the targets judge the default answer`);
  return [serverDefault, ...(listed as Quality[]).filter((q) => q !== serverDefault)];
})();
const defaultQuality = qualities[0];

const began = performance.now();
const log = (line: string) => console.error(`[${((performance.now() - began) / 1000).toFixed(0).padStart(4)} s] ${line}`);

/**
 * Cutout's load levels: enough requests for percentiles, bounded so a full run stays near 15
 * minutes. Every level sends the server's default quality; the 8-client level is followed at
 * once by the same level at each other quality, so their throughputs are compared minutes apart.
 */
const cutoutLevels: LoadLevel[] = concurrency.flatMap((clients) => {
  const level = {
    clients,
    maxRequests: quick ? Math.max(2, clients) : Math.max(8, Math.min(2 * clients, 32), clients === 8 ? 24 : 0),
    maxMs: quick ? 30_000 : 60_000,
  };
  return (clients === 8 ? qualities : [defaultQuality]).map((quality) => ({ ...level, quality }));
});
/** The peer is 3–10 × slower: fewer calls, and every client's first call always completes. */
const peerLevels: LoadLevel[] = concurrency.map((clients) => ({ clients, maxRequests: quick ? clients : Math.max(4, clients), maxMs: quick ? 30_000 : 90_000 }));

async function main(): Promise<void> {
  const machine = describeMachine();
  const startedAt = new Date().toISOString();
  const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
  log(`${command} on ${machine.cpu}, ${machine.cores} cores; load average ${machine.loadAverage.join(' / ')}`);
  if (machine.loadAverage[0] > machine.cores * 0.5) log(`warning: the machine is busy (load ${machine.loadAverage[0]} on ${machine.cores} cores); timings will be disturbed`);

  const work = await mkdtemp(join(tmpdir(), 'cutout-bench-'));
  const images = await makeBenchImages(args.photo, sizes, work, defaultQuality);
  log(`photos: ${images.map((i) => `${i.label} ${i.width}×${i.height} (${(i.bytes.length / 1e6).toFixed(2)} MB)`).join(', ')}`);

  const fp32Path = await assembleModel(join(ROOT, 'data'));
  const setting = serverConfig.modelPrecision;
  const choice = setting === 'auto' ? decidePrecision(await runPrecisionProbe({ threads })) : { precision: setting, reason: `CUTOUT_MODEL_PRECISION=${setting}` };
  const modelPath = choice.precision === 'int8' ? await buildInt8Model(fp32Path, BUNDLED_RANGES, join(ROOT, 'data')) : fp32Path;
  const precision = { setting, chosen: choice.precision, reason: choice.reason };
  log(`model: ${choice.precision} (${choice.reason}): ${relative(ROOT, modelPath)}`);
  log('model arithmetic: parsing the float32 ONNX graph and fetching every convolution\'s input and output once');
  const model = { path: relative(ROOT, fp32Path), bytes: (await stat(fp32Path)).size, ...(await measureModelArithmetic(fp32Path, measureTensorShapes)) };
  log(`  ${model.convolutions} convolutions, ${(model.macs / 1e9).toFixed(2)} GMAC per pass`);

  const cpu = new CpuAccount();
  const measuredMatmul = await cpu.measure(() => measureMatMul({ n: 2048, threads, warmup: 2, runs: quick ? 3 : 7 }));
  const matmul = { ...measuredMatmul.value, foreignCores: measuredMatmul.foreignCores };
  log(`GEMM reference: ${matmul.gflops.toFixed(0)} GFLOP/s (${matmul.median.toFixed(0)} ms per ${matmul.n}³ product)`);

  const floorInput = images.reduce((best, i) => (Math.abs(i.megapixels - 2.5) < Math.abs(best.megapixels - 2.5) ? i : best));
  const tensor = toModelTensor(await decodeForModel(floorInput.bytes, { maxPixels: MAX_PIXELS, size: 1024 }), channelTables(ISNET_PROCESSING));
  let meter = await openFloorMeter(modelPath, tensor, segmenterOptions);
  const measuredBefore = await cpu.measure(() => measurePasses(meter, { warmup: 2, runs }));
  const before = { ...measuredBefore.value, foreignCores: measuredBefore.foreignCores };
  log(`inference alone: ${before.median.toFixed(0)} ms (${before.samples.map((v) => v.toFixed(0)).join(', ')})`);
  const autoLooks = qualities.includes('auto') ? await autoLooksOf(images, modelPath, segmenterOptions) : undefined;
  if (autoLooks) log(`quality auto on this photo: ${Object.entries(autoLooks).map(([label, looks]) => `${label} ${looks} look${looks === 1 ? '' : 's'}`).join(', ')} (src/pipeline/second-look.ts)`);
  // The package ships float16 weights and twelve outputs; assembleModel rewrites them to
  // float32 and the mask alone for the server. The shipped file's pass (what the peer runs)
  // shows what that rewrite is worth.
  const shippedPath = await assembleModel(join(ROOT, 'data'), { rewrite: false });
  let shipped: BenchResults['shippedModel'];
  if (shippedPath !== fp32Path) {
    const shippedMeter = await openFloorMeter(shippedPath, tensor, segmenterOptions);
    shipped = { path: relative(ROOT, shippedPath), ...(await measurePasses(shippedMeter, { warmup: 1, runs: quick ? 2 : 3 })) };
    await shippedMeter.close();
    log(`the model as shipped (${shipped.path}): ${shipped.median.toFixed(0)} ms per pass`);
  }

  const buildDir = join(ROOT, 'bench/.build');
  const build = await compileServer(ROOT, buildDir);
  if (build.warning) log(`warning: ${build.warning}`);
  let server: CutoutServer | undefined;
  let peer: PeerWorker | undefined;
  let finished = false;
  try {
    server = await startCutoutServer({ root: ROOT, buildDir, dataDir: join(work, 'data'), modelsDir: dirname(modelPath), threads, env: { CUTOUT_MODEL_PRECISION: choice.precision } });
    log(`server ready at ${server.baseUrl} (pid ${server.pid}, log ${server.logPath}), running ${server.precision}`);
    if (server.precision !== choice.precision) throw new Error(`the server runs ${server.precision}, the bench measures ${choice.precision}`);
    const serverMemory = new PeakTracker(server.pid);
    cpu.watch(server.pid);
    const serverRssReady = readProcessMemory(server.pid)?.rss;
    if (!skipPeer) {
      peer = await PeerWorker.start(join(ROOT, 'bench/peer'));
      log(`peer worker pid ${peer.pid}: ${Object.entries(peer.versions).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    }
    const peerMemory = peer ? new PeakTracker(peer.pid) : undefined;
    if (peer) cpu.watch(peer.pid);

    log(`end to end, ${runs} rounds per size: model alone, Cutout at ${qualities.join(', ')}, Cutout at ${defaultQuality} with refine: false, peer (the server's default quality: ${defaultQuality})`);
    const endToEnd = await measureEndToEnd(images, server, peer, { runs, qualities, floorPass: () => meter.pass(), cpu, log });
    const loadImage = floorInput;
    log(`load: ${loadImage.label}, clients ${concurrency.join(', ')}; ${PASSES_AROUND_LEVELS} bare passes before each level and after the last`);
    const floorMeter = meter;
    const cutoutLoad = await measureCutoutLoad(server, loadImage, cutoutLevels, { memory: serverMemory, cpu }, log, async () => (await measurePasses(floorMeter, { warmup: 0, runs: PASSES_AROUND_LEVELS })).samples);
    // The memory phase gets the machine to itself: this process's model session goes.
    await meter.close();

    const largest = images.reduce((a, b) => (b.megapixels > a.megapixels ? b : a));
    const memoryClients = 16;
    log(`memory: ${memoryClients} concurrent ${largest.label} requests`);
    const memoryLevel: LoadLevel = { clients: memoryClients, maxRequests: quick ? memoryClients : 2 * memoryClients, maxMs: 60_000, quality: defaultQuality };
    const [memory] = await measureCutoutLoad(server, largest, [memoryLevel], { memory: serverMemory, cpu }, log);
    const serverPeakRss = serverMemory.overall;

    let peerLoad: BenchResults['load']['peer'] = [];
    if (peer && peerMemory) {
      log(`peer load: ${loadImage.label}, clients ${concurrency.join(', ')}`);
      peerLoad = await measurePeerLoad(peer, loadImage, peerLevels, { memory: peerMemory, cpu }, log);
    }
    const peerPeakRss = peerMemory?.overall;
    const peerVersions = peer?.versions ?? {};
    await peer?.stop();
    peer = undefined;
    await server.stop();
    server = undefined;

    let fp32Baseline: BenchResults['fp32Baseline'];
    if (args['fp32-baseline'] && choice.precision === 'int8') {
      log('float32 baseline: a second server with CUTOUT_MODEL_PRECISION=fp32, 8 clients and the memory burst');
      server = await startCutoutServer({ root: ROOT, buildDir, dataDir: join(work, 'data-fp32'), modelsDir: dirname(modelPath), threads, env: { CUTOUT_MODEL_PRECISION: 'fp32' } });
      const baselineMemory = new PeakTracker(server.pid);
      cpu.watch(server.pid);
      const rssReady = readProcessMemory(server.pid)?.rss;
      const at8Level = cutoutLevels.find((level) => level.clients === 8) ?? { clients: 8, maxRequests: quick ? 8 : 24, maxMs: quick ? 30_000 : 60_000, quality: defaultQuality };
      const [at8] = await measureCutoutLoad(server, loadImage, [at8Level], { memory: baselineMemory, cpu }, log);
      const [baselineBurst] = await measureCutoutLoad(server, largest, [memoryLevel], { memory: baselineMemory, cpu }, log);
      fp32Baseline = { rssReady, at8, memory: baselineBurst };
      await server.stop();
      server = undefined;
    }

    meter = await openFloorMeter(modelPath, tensor, segmenterOptions);
    const measuredAfter = await cpu.measure(() => measurePasses(meter, { warmup: 1, runs }));
    const after = { ...measuredAfter.value, foreignCores: measuredAfter.foreignCores };
    await meter.close();
    log(`inference alone, again: ${after.median.toFixed(0)} ms`);
    const interleavedSamples = endToEnd.flatMap((e) => e.floor.samples);
    const interleaved = { samples: interleavedSamples, median: median(interleavedSamples) };
    const all = [...before.samples, ...interleavedSamples, ...after.samples];
    const floor = { samples: all, median: median(all), before, interleaved, after, gflops: (2 * model.macs) / 1e9 / (median(all) / 1000) };

    const partial: Omit<BenchResults, 'targets'> = {
      startedAt,
      durationS: (performance.now() - began) / 1000,
      command,
      machine,
      loadAverageAfter: loadavg().map((l) => Math.round(l * 100) / 100),
      options: { quick, skipPeer, sizes, concurrency, qualities, runs, photo: relative(ROOT, args.photo), cutoutLevels, peerLevels },
      qualities: { serverDefault: defaultQuality, measured: qualities, autoLooks },
      versions: await versions(peerVersions),
      threads,
      model,
      floor,
      shippedModel: shipped,
      matmul,
      endToEnd,
      load: { image: imageInfo(loadImage), cutout: cutoutLoad, peer: peerLoad },
      memory: { image: imageInfo(largest), ...memory },
      serverRssReady,
      serverPeakRss,
      peerPeakRss,
      precision,
      fp32Baseline,
    };
    const results: BenchResults = { ...partial, targets: judgeTargets(partial) };
    console.log(renderReport(results));

    if (args.out) {
      const out = resolve(args.out);
      await mkdir(dirname(out), { recursive: true });
      await writeFile(out, `${JSON.stringify(results, null, 2)}\n`);
      const chartPath = out.replace(/\.json$/i, '') + '.svg';
      const subtitle = `${machine.cores} cores, ${startedAt.slice(0, 10)}, Cutout at quality ${defaultQuality} (the default)`;
      const defaultLoad = cutoutLoad.filter((level) => level.quality === defaultQuality);
      await writeFile(chartPath, renderLoadChart({ cutout: defaultLoad, peer: peerLoad, imageLabel: loadImage.label, floorMs: floor.median, subtitle, passesPerRequest: defaultQuality === 'auto' ? (autoLooks?.[loadImage.label] ?? 1) : QUALITY_VIEWS[defaultQuality].length }));
      log(`wrote ${relative(process.cwd(), out)} and ${relative(process.cwd(), chartPath)}`);
    }
    finished = true;
  } finally {
    await meter.close().catch(() => {});
    await peer?.stop().catch(() => {});
    await server?.stop().catch(() => {});
    if (finished) await rm(work, { recursive: true, force: true });
    else log(`stopped early; the photos and the server's log are kept in ${work}`);
  }
}

/** Versions of what was measured: Cutout's own native dependencies and, if it ran, the peer's. */
async function versions(peer: Record<string, string>): Promise<Record<string, string>> {
  const own = async (name: string) => (JSON.parse(await readFile(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  const result: Record<string, string> = { 'onnxruntime-node': await own('onnxruntime-node'), sharp: await own('sharp'), fastify: await own('fastify') };
  for (const [name, version] of Object.entries(peer)) result[`peer ${name}`] = version;
  return result;
}

// The bare passes run in this process, so it starts under the same C-library settings as the
// server (package.json's start script): one run again, as a child, if they are not set yet.
// The peer gets the environment the bench was started with (PEER_ENV), as its users run it.
const startEnv = await startScriptEnvironment(ROOT);
if (Object.entries(startEnv).some(([name, value]) => process.env[name] !== value)) {
  const env = { ...process.env, ...startEnv, [PEER_ENV]: JSON.stringify(process.env) };
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], { env, stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  child.on('exit', (code) => process.exit(code ?? 1));
} else {
  await main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
