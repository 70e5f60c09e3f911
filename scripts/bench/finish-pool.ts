/**
 * Images a second through the removal service, end to end but for HTTP (the config, the
 * inference queue, the model's sessions, the finish threads and the HEIC threads as
 * `create-services.ts` makes them from the environment), with N callers each sending the
 * next photo once its answer is in. Each variant runs in a fresh process, the variants in
 * turn, `--rounds` times, so that a drift of the machine touches them all alike.
 *
 *   npx tsx scripts/bench/finish-pool.ts --mode standin [--finish-threads 1,2]
 *   npx tsx scripts/bench/finish-pool.ts --mode cpu --before /tmp/cutout-before
 *
 * `--after DIR`: the checkout measured as "after" and by `standin` (default this one; a clean
 * `git worktree` of a commit keeps other people's unfinished edits out of the figures).
 *
 * `standin`: a stand-in for a GPU, a model so fast that its pass is not the limit: the bundled
 * IS-Net made to work at `--side`² (default 160; test/helpers/isnet-at-size.ts, as the WebGPU tests run it) on
 * one CPU thread, the rest of the defaults as they are; one variant per finish-thread count.
 * `cpu`: the server's defaults (the bundled model, int8 where the probe finds it faster) of
 * this checkout and of `--before` (a checkout of the commit before, e.g. a `git worktree`,
 * whose node_modules may be a link to this one's). Prints a table and, with `--out`, writes it.
 *
 *   npx tsx scripts/bench/finish-pool.ts --mode sessions [--sessions 1,2,4]
 *
 * `sessions`: what each model session costs in memory: the bundled model (int8, then float32)
 * loaded as 1, 2, 4 sessions of one thread in a fresh process each, every session running
 * one pass at once, and the process's RSS after and its peak.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { describeMachine } from './machine.js';
import { median } from './stats.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'standin' },
    side: { type: 'string', default: '160' },
    'finish-threads': { type: 'string', default: '1,2' },
    before: { type: 'string' },
    after: { type: 'string' },
    clients: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '40' },
    rounds: { type: 'string', default: '2' },
    megapixels: { type: 'string', default: '2.5' },
    photo: { type: 'string', default: join(ROOT, '../shared/fixtures/photos/animal-3.jpg') },
    out: { type: 'string' },
    // The child's side: one variant in this process.
    child: { type: 'boolean', default: false },
    src: { type: 'string' },
    work: { type: 'string' },
    sessions: { type: 'string', default: '1,2,4' },
    'session-child': { type: 'string' },
    form: { type: 'string' },
  },
});

/** What one child measured. */
interface ChildResult {
  startMs: number;
  images: number;
  seconds: number;
  imagesPerSecond: number;
  medianMs: number;
  /** CPU time of the process over the window, in cores. */
  cores: number;
  config: { sessions: number; inferenceThreads: number; finishThreads: number };
  /** The form of the model that ran (CUTOUT_MODEL_PRECISION, or what `auto`'s probe chose). */
  precision?: string;
  /** Median ms of each stage the removals report (Server-Timing's), over the window. */
  stages: Record<string, number>;
}

if (values.child) await runChild();
else if (values['session-child']) await measureSessions(Number(values['session-child']), values.form === 'fp32' ? 'fp32' : 'int8');
else if (values.mode === 'sessions') await runSessions();
else await runParent();

/** The memory of 1, 2, 4… sessions, each count in a fresh process. */
async function runSessions(): Promise<void> {
  const machine = describeMachine();
  const lines = [`# finish-pool bench, --mode sessions: RSS of the bundled model as N one-thread sessions, one pass on each at once (arena on, as served)`, `${machine.cpu}, ${machine.cores} cores; load average at start ${machine.loadAverage.join(' ')}`];
  console.log(lines.join('\n'));
  for (const form of ['int8', 'fp32']) {
    for (const count of values.sessions.split(',')) {
      const args = [...process.execArgv, fileURLToPath(import.meta.url), '--session-child', count, '--form', form, '--photo', values.photo];
      const line = execFileSync(process.execPath, args, { cwd: ROOT, env: { ...process.env, MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '4194304' }, encoding: 'utf8' }).trim();
      lines.push(line);
      console.log(line);
    }
  }
  if (values.out) await writeFile(values.out, `${lines.join('\n')}\n`);
}

async function measureSessions(count: number, form: 'int8' | 'fp32'): Promise<void> {
  const { assembleModel } = await import('../../src/model/assemble-model.js');
  const { BUNDLED_RANGES, buildInt8Model } = await import('../../src/model/int8-model.js');
  const { loadSegmenter } = await import('../../src/model/onnx-segmenter.js');
  const { decodeForModel } = await import('../../src/pipeline/decode.js');
  const { readProcessMemory } = await import('../lib/process-memory.js');
  const { readFile } = await import('node:fs/promises');
  const dataDir = join(ROOT, 'data');
  const fp32 = await assembleModel(dataDir);
  const path = form === 'fp32' ? fp32 : await buildInt8Model(fp32, BUNDLED_RANGES, dataDir);
  const before = readProcessMemory(process.pid)!.rss;
  const segmenter = await loadSegmenter(path, { threads: 1, instances: count });
  const picture = await decodeForModel(await readFile(values.photo), { maxPixels: 1e9, size: segmenter.size });
  for (let round = 0; round < 2; round++) await Promise.all(Array.from({ length: count }, () => segmenter.segment([{ ...picture, data: picture.data.slice() }])));
  const after = readProcessMemory(process.pid)!;
  await segmenter.close();
  const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
  console.log(`${form}, ${count} session(s): RSS added ${mib(after.rss - before)} MiB (${mib((after.rss - before) / count)} a session), RSS ${mib(after.rss)} MiB, peak ${mib(after.peak)} MiB`);
  process.exit(0);
}

async function runParent(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'cutout-finish-pool-'));
  try {
    const machine = describeMachine();
    const photo = join(work, 'photo.jpg');
    const source = sharp(values.photo);
    const { width = 1, height = 1 } = await source.metadata();
    const scale = Math.sqrt((Number(values.megapixels) * 1e6) / (width * height));
    await sharp(values.photo).resize(Math.round(width * scale), Math.round(height * scale)).jpeg({ quality: 90 }).toFile(photo);
    // The bundled model's files, shared by every child (the int8 model is built once, here).
    const models = join(work, 'models');
    await mkdir(models);
    for (const file of await readdir(join(ROOT, 'data/models'))) await symlink(join(ROOT, 'data/models', file), join(models, file));

    const after = join(values.after ? resolve(values.after) : ROOT, 'src');
    const variants: { label: string; src: string; env: Record<string, string> }[] = [];
    if (values.mode === 'standin') {
      const STANDIN_SIDE = Number(values.side);
      const STANDIN_MODEL = `isnet-${STANDIN_SIDE}`;
      const { isnetAtSize } = await import('../../test/helpers/isnet-at-size.js');
      const { installModel } = await import('../../src/model/installed-models.js');
      const { ISNET_PROCESSING } = await import('../../src/model/model-processing.js');
      const standinData = join(work, 'standin');
      await mkdir(standinData);
      await installModel(standinData, STANDIN_MODEL, await isnetAtSize(join(tmpdir(), 'cutout-test-model'), STANDIN_SIDE), { ...ISNET_PROCESSING, inputSize: STANDIN_SIDE });
      for (const threads of values['finish-threads'].split(',')) {
        variants.push({
          label: `finish threads ${threads}`,
          src: after,
          env: { CUTOUT_MODELS: STANDIN_MODEL, CUTOUT_INFERENCE_THREADS: '1', CUTOUT_FINISH_THREADS: threads, CUTOUT_STANDIN_DATA: standinData },
        });
      }
    } else {
      if (!values.before) throw new Error('--mode cpu needs --before DIR, a checkout of the commit to compare with');
      // auto's probe may choose differently from one start to the next where int8's lead is
      // small; both sides run the same form, `auto` unless CUTOUT_MODEL_PRECISION says.
      const precision: Record<string, string> = process.env.CUTOUT_MODEL_PRECISION ? { CUTOUT_MODEL_PRECISION: process.env.CUTOUT_MODEL_PRECISION } : {};
      variants.push({ label: 'before', src: join(resolve(values.before), 'src'), env: precision }, { label: 'after', src: after, env: precision });
    }

    const commitOf = (src: string) => execFileSync('git', ['-C', src, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const header = [
      `# finish-pool bench, --mode ${values.mode}: ${values.clients} callers, ${values.seconds} s a run, ${values.rounds} rounds, ${values.megapixels} MP (${values.photo.split('/').pop()} resized)`,
      `${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB; load average at start ${machine.loadAverage.join(' ')}; node ${machine.node}`,
      ...variants.map((variant) => `${variant.label}: at ${commitOf(variant.src)}${Object.keys(variant.env).length ? `, ${Object.entries(variant.env).filter(([key]) => key.startsWith('CUTOUT_') && key !== 'CUTOUT_STANDIN_DATA').map(([key, value]) => `${key}=${value}`).join(' ')}` : ''}`),
    ];
    console.log(header.join('\n'));
    // One run unmeasured first: it builds the int8 model and warms the page cache.
    await runVariant(variants[0], work, photo, true);
    const results = new Map<string, ChildResult[]>(variants.map((variant) => [variant.label, []]));
    const rows: string[] = [];
    for (let round = 1; round <= Number(values.rounds); round++) {
      for (const variant of variants) {
        const result = await runVariant(variant, work, photo, false);
        results.get(variant.label)!.push(result);
        const row = `round ${round}, ${variant.label}: ${result.imagesPerSecond.toFixed(3)} images/s (${result.images} in ${result.seconds.toFixed(1)} s), median ${result.medianMs.toFixed(0)} ms, ${result.cores.toFixed(2)} cores busy, started in ${result.startMs.toFixed(0)} ms; ${result.precision ?? '?'}, sessions ${result.config.sessions} × ${result.config.inferenceThreads} threads, finish threads ${result.config.finishThreads}; stage medians (ms) ${Object.entries(result.stages).map(([stage, ms]) => `${stage} ${ms}`).join(', ')}; load ${loadAverage()}`;
        rows.push(row);
        console.log(row);
      }
    }
    const summary = variants.map((variant) => {
      const runs = results.get(variant.label)!;
      const rates = runs.map((run) => run.imagesPerSecond);
      return `${variant.label}: median ${median(rates).toFixed(3)} images/s (runs ${rates.map((rate) => rate.toFixed(3)).join(', ')}), start ${median(runs.map((run) => run.startMs)).toFixed(0)} ms, answer ${median(runs.map((run) => run.medianMs)).toFixed(0)} ms`;
    });
    console.log(summary.join('\n'));
    if (values.out) await writeFile(values.out, `${[...header, '', ...rows, '', ...summary].join('\n')}\nload average at the end ${loadAverage()}\n`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

function loadAverage(): string {
  return execFileSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).split(' ').slice(0, 3).join(' ');
}

/** Runs one variant in a process of its own and reads its result line. */
function runVariant(variant: { src: string; env: Record<string, string> }, work: string, photo: string, warmUp: boolean): Promise<ChildResult> {
  const args = [...process.execArgv, fileURLToPath(import.meta.url), '--child', '--src', variant.src, '--work', work, '--photo', photo, '--clients', values.clients, '--seconds', warmUp ? '5' : values.seconds];
  const child = spawn(process.execPath, args, { env: { ...process.env, ...variant.env, MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '4194304' }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolvePromise, reject) => {
    child.on('exit', (code) => {
      const line = out.split('\n').find((text) => text.startsWith('RESULT '));
      if (code !== 0 || !line) reject(new Error(`the run exited with ${code}: ${out.slice(-2000)}`));
      else resolvePromise(JSON.parse(line.slice('RESULT '.length)) as ChildResult);
    });
  });
}

async function runChild(): Promise<void> {
  const src = values.src!;
  const { loadConfig } = (await import(join(src, 'config.ts'))) as typeof import('../../src/config.js');
  const { createServices } = (await import(join(src, 'create-services.ts'))) as typeof import('../../src/create-services.js');
  const { openStore } = (await import(join(src, 'store/open-store.ts'))) as typeof import('../../src/store/open-store.js');
  const { putEventLoopFirst } = (await import(join(src, 'threads/thread-priority.ts'))) as typeof import('../../src/threads/thread-priority.js');
  const { readFile } = await import('node:fs/promises');
  putEventLoopFirst();
  const dataDir = await mkdtemp(join(values.work!, 'data-'));
  const standin = process.env.CUTOUT_STANDIN_DATA;
  await symlink(standin ? join(standin, 'models') : join(values.work!, 'models'), join(dataDir, 'models'));
  const config = loadConfig({ ...process.env, CUTOUT_DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
  const store = await openStore(config);
  const { services, close } = createServices(config, store);
  const started = performance.now();
  await services.model.load();
  const startMs = performance.now() - started;
  const photo = new Uint8Array(await readFile(values.photo));
  const remove = () => services.removals.remove(photo, new AbortController().signal);
  for (let i = 0; i < 2; i++) await remove();

  const seconds = Number(values.seconds);
  const times: number[] = [];
  const stages: Record<string, number>[] = [];
  const cpu = process.cpuUsage();
  const begin = performance.now();
  const end = begin + seconds * 1000;
  let lastEnd = begin;
  await Promise.all(
    Array.from({ length: Number(values.clients) }, async () => {
      while (performance.now() < end) {
        const sent = performance.now();
        const { timings } = await remove();
        const done = performance.now();
        if (done <= end) {
          times.push(done - sent);
          stages.push(timings as unknown as Record<string, number>);
          lastEnd = Math.max(lastEnd, done);
        }
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  const window = (lastEnd - begin) / 1000;
  const result: ChildResult = {
    startMs,
    images: times.length,
    seconds: window,
    imagesPerSecond: times.length / window,
    medianMs: median(times),
    cores: (used.user + used.system) / 1e6 / ((performance.now() - begin) / 1000),
    precision: services.model.precision?.precision,
    stages: Object.fromEntries(Object.keys(stages[0] ?? {}).map((stage) => [stage, Math.round(median(stages.map((timing) => timing[stage])))])),
    config: { sessions: config.inferenceConcurrency, inferenceThreads: config.inferenceThreads, finishThreads: (config as { finishThreads?: number }).finishThreads ?? 1 },
  };
  await close();
  await store.close();
  console.log(`RESULT ${JSON.stringify(result)}`);
  process.exit(0);
}
