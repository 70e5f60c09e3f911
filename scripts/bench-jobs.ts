/**
 * The jobs' two speed targets (issue 35), on one fresh server (compiled and started as
 * `npm run bench` does, default settings, the embedded runner):
 *
 * 1. Capacity: a folder of `--photos` 0.7 MP photos through `cutout remove` at each of
 *    `--concurrency` (the best one counts), then the same folder as one job
 *    (`cutout remove --job`: one upload, the server's runner, the zip downloaded and
 *    unpacked). Prints each wall time and the job's against the best synchronous one.
 * 2. Interactive first, and the job's share: `--clients` synchronous clients of a 0.7 MP
 *    photo for `--seconds` with no job, then for `--beside-seconds` (default `--seconds`)
 *    while a job of `--job-photos` photos runs; prints their p95 with the job against without
 *    it, and the job's pace against its target (at least 0.8 × CUTOUT_JOB_MIN_SHARE × the
 *    server's images a second with the clients alone; `--share` sets the server's share).
 *    Then the clients stop and the job is waited for to its end (`--cancel` cancels it instead).
 *
 * The photos are the fixtures' photos (../shared/fixtures/photos) scaled to 1000 × 700,
 * copied round-robin under `data/bench-jobs/`. Only 127.0.0.1 is contacted. Take the figures
 * on a quiet machine: the script prints the load average at each phase.
 *
 * `--zip64` runs, instead of the two, the results zip's target: a job of `--zip64-photos`
 * grainy 16 MP photos (`--zip64-size`), PNG results over an opaque background of random
 * pixels, which keeps each PNG at its raw size (3 bytes a pixel), so that they total over
 * 4.2 GiB; its zip is downloaded and every entry read by Python's zipfile
 * and `unzip -t` (see scripts/bench/zip64-job.ts). Writes its figures to
 * bench/results/jobs-zip64.json. CPU-heavy: tens of minutes on 2 cores.
 *
 *   npm run bench:jobs -- [--photos 1000] [--concurrency 2,4] [--clients 2] [--seconds 90] [--job-photos 2000] [--skip capacity|interactive]
 *   npm run bench:jobs -- --skip capacity --seconds 60 --beside-seconds 300 --job-photos 300 [--share 0.1]
 *   npm run bench:jobs -- --zip64 [--zip64-photos 96] [--zip64-size 4896x3264]
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { assembleModel } from '../src/model/assemble-model.js';
import { httpRequest } from './bench/http-load.js';
import { describeMachine } from './bench/machine.js';
import { compileServer, startCutoutServer, type CutoutServer } from './lib/server-process.js';
import { percentile } from './bench/stats.js';
import { runZip64Job, ZIP64_SERVER_ENV } from './bench/zip64-job.js';
import { multipartBody } from './lib/multipart-body.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    photos: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '2,4' },
    clients: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '90' },
    'job-photos': { type: 'string', default: '2000' },
    'beside-seconds': { type: 'string' },
    share: { type: 'string' },
    cancel: { type: 'boolean', default: false },
    skip: { type: 'string', multiple: true, default: [] },
    zip64: { type: 'boolean', default: false },
    'zip64-photos': { type: 'string', default: '96' },
    'zip64-size': { type: 'string', default: '4896x3264' },
  },
});
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

/** `count` photos of 1000 × 700 in a folder of their own (made once, kept for later runs). */
async function photoFolder(count: number): Promise<string> {
  const sources = join(ROOT, '../shared/fixtures/photos');
  const names = (await readdir(sources)).filter((name) => name.endsWith('.jpg')).sort();
  const dir = join(ROOT, `data/bench-jobs/${count}`);
  await mkdir(dir, { recursive: true });
  const scaled = await Promise.all(names.map((name) => sharp(join(sources, name)).autoOrient().resize(1000, 700, { fit: 'cover' }).jpeg({ quality: 90 }).toBuffer()));
  for (let i = 0; i < count; i++) {
    const path = join(dir, `photo-${String(i).padStart(5, '0')}.jpg`);
    if (!existsSync(path)) await sharp(scaled[i % scaled.length]).toFile(path);
  }
  return dir;
}

/** Runs the compiled CLI; resolves with its wall time in seconds, rejects when it fails. */
function cli(buildDir: string, server: CutoutServer, tokenId: string, args: string[]): Promise<number> {
  const started = performance.now();
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [join(buildDir, 'cli/main.js'), ...args], {
      cwd: ROOT,
      env: { ...process.env, CUTOUT_URL: server.baseUrl, CUTOUT_TOKEN_ID: tokenId },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('close', (code) => (code === 0 ? done((performance.now() - started) / 1000) : fail(new Error(`cutout ${args.join(' ')} exited ${code}: ${stderr.slice(-2000)}`))));
  });
}

/** `clients` closed-loop clients of one photo for `seconds`; the latencies of their 200s, in ms. */
async function syncClients(server: CutoutServer, photo: Buffer, clients: number, seconds: number): Promise<{ ms: number[]; other: number }> {
  const { body, contentType } = multipartBody([{ name: 'file', filename: 'photo.jpg', contentType: 'image/jpeg', data: photo }]);
  const until = performance.now() + seconds * 1000;
  const ms: number[] = [];
  let other = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < until) {
        const answer = await httpRequest(`${server.baseUrl}/api/v1/background/remove/multipart`, { method: 'POST', headers: { authorization: server.managedToken, 'content-type': contentType }, body, timeoutMs: 120_000 });
        if (answer.status === 200) ms.push(answer.ms);
        else other++;
      }
    }),
  );
  return { ms, other };
}

const buildDir = join(ROOT, 'bench/.build');
const warning = (await compileServer(ROOT, buildDir)).warning;
if (warning) console.warn(warning);
await assembleModel(join(ROOT, 'data'));
const machine = describeMachine();
const work = await mkdtemp(join(tmpdir(), 'cutout-bench-jobs-'));
const server = await startCutoutServer({
  root: ROOT,
  buildDir,
  dataDir: join(work, 'data'),
  modelsDir: join(ROOT, 'data/models'),
  threads: Number(process.env.CUTOUT_INFERENCE_THREADS) || availableParallelism(),
  env: values.zip64 ? ZIP64_SERVER_ENV : values.share === undefined ? {} : { CUTOUT_JOB_MIN_SHARE: values.share },
});
try {
  console.log(`# Jobs benchmark: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}; load average at start ${machine.loadAverage.join(' ')}; precision ${server.precision}`);
  if (values.zip64) {
    const [width, height] = values['zip64-size'].split('x').map(Number);
    const started = new Date();
    const result = await runZip64Job(ROOT, server, work, { count: Number(values['zip64-photos']), width, height }, (line) => console.log(`${line} (load ${load()})`));
    const GiB = (bytes: number) => (bytes / 2 ** 30).toFixed(2);
    console.log(
      `results ${GiB(result.resultBytes)} GiB in ${result.succeeded} PNGs (${result.failed} failed), zip ${GiB(result.zipBytes)} GiB${result.zip64 ? ' (ZIP64)' : ''}; Python's zipfile: ${result.python.entries} entries, ${result.python.corrupt === null ? 'every CRC right' : `bad entry ${result.python.corrupt}`}; unzip -t: exit ${result.unzip.exitCode}, ${result.unzip.summary}`,
    );
    console.log(`verdict: ${result.verdict} (target: results over 4.2 GiB, one zip, every entry readable by Python's zipfile and unzip -t)`);
    const out = join(ROOT, 'bench/results/jobs-zip64.json');
    const command = `npm run bench:jobs -- ${process.argv.slice(2).join(' ')}`;
    await writeFile(out, `${JSON.stringify({ command, started: started.toISOString(), machine, loadAverageAtEnd: loadavg().map((l) => Math.round(l * 100) / 100), precision: server.precision, ...result }, null, 2)}\n`);
    console.log(`written to ${out}`);
  }
  if (!values.zip64 && !values.skip.includes('capacity')) {
    const photos = Number(values.photos);
    const folder = await photoFolder(photos);
    // Warm the model first, so that the first run does not pay for it.
    await syncClients(server, await readFile(join(folder, 'photo-00000.jpg')), 1, 3);
    const times: [string, number][] = [];
    for (const concurrency of values.concurrency.split(',').map(Number)) {
      const seconds = await cli(buildDir, server, server.tokenId, ['remove', folder, '-o', join(work, `sync-${concurrency}`), '--concurrency', String(concurrency)]);
      times.push([`cutout remove --concurrency ${concurrency}`, seconds]);
      console.log(`${times.at(-1)![0]}: ${seconds.toFixed(1)} s (${(photos / seconds).toFixed(2)} photos/s; load ${load()})`);
    }
    const job = await cli(buildDir, server, server.tokenId, ['remove', folder, '-o', join(work, 'job'), '--job']);
    const written = (await readdir(join(work, 'job'))).length;
    const best = Math.min(...times.map(([, seconds]) => seconds));
    console.log(`cutout remove --job: ${job.toFixed(1)} s (${(photos / job).toFixed(2)} photos/s; ${written} results written; load ${load()})`);
    console.log(`capacity: the job took ${(job / best).toFixed(2)}× the best synchronous run (target at most 1.1×)`);
  }
  if (!values.zip64 && !values.skip.includes('interactive')) {
    const clients = Number(values.clients);
    const seconds = Number(values.seconds);
    const jobPhotos = Number(values['job-photos']);
    const folder = await photoFolder(jobPhotos);
    const photo = await readFile(join(folder, 'photo-00001.jpg'));
    const alone = await syncClients(server, photo, clients, seconds);
    console.log(`${clients} synchronous clients, no job: ${alone.ms.length} answers, median ${(percentile(alone.ms, 50) / 1000).toFixed(2)} s, p95 ${(percentile(alone.ms, 95) / 1000).toFixed(2)} s (load ${load()})`);
    const files = (await readdir(folder)).sort().slice(0, jobPhotos);
    const { body, contentType } = multipartBody(await Promise.all(files.map(async (name) => ({ name: 'files', filename: name, contentType: 'image/jpeg', data: await readFile(join(folder, name)) }))));
    const made = await httpRequest(`${server.baseUrl}/api/v1/jobs/multipart`, { method: 'POST', headers: { authorization: server.managedToken, 'content-type': contentType }, body, timeoutMs: 600_000 });
    if (made.status !== 202) throw new Error(`the job was refused: ${made.status} ${made.body.toString()}`);
    const jobId = (JSON.parse(made.body.toString()) as { id: string }).id;
    type JobStatus = { status: string; counts: Record<string, number>; progress: { pace: string; minimum_share: number; images_per_minute: number } | null };
    const status = async () => JSON.parse((await httpRequest(`${server.baseUrl}/api/v1/jobs/${jobId}?per_page=1`, { headers: { authorization: server.managedToken } })).body.toString()) as JobStatus;
    const before = (await status()).counts.succeeded;
    const besideSeconds = Number(values['beside-seconds'] ?? seconds);
    const beside = await syncClients(server, photo, clients, besideSeconds);
    const during = await status();
    const after = during.counts.succeeded;
    console.log(
      `${clients} synchronous clients beside a ${jobPhotos}-photo job: ${beside.ms.length} answers (${beside.other} not 200), median ${(percentile(beside.ms, 50) / 1000).toFixed(2)} s, p95 ${(percentile(beside.ms, 95) / 1000).toFixed(2)} s; the job finished ${after - before} photos meanwhile; its progress said ${JSON.stringify(during.progress)} (load ${load()})`,
    );
    console.log(`interactive first: p95 with the job ${(percentile(beside.ms, 95) / percentile(alone.ms, 95)).toFixed(2)}× without (target at most 1.3×)`);
    const share = during.progress?.minimum_share ?? 0;
    const serverRate = alone.ms.length / seconds;
    const jobRate = (after - before) / besideSeconds;
    console.log(
      `the job's share: ${jobRate.toFixed(3)} images/s beside the clients, against 0.8 × ${share} × ${serverRate.toFixed(2)} images/s = ${(0.8 * share * serverRate).toFixed(3)} (${jobRate >= 0.8 * share * serverRate ? 'met' : 'NOT met'}); every answer 200: ${beside.other === 0 && alone.other === 0 ? 'yes' : 'no'}`,
    );
    if (values.cancel) {
      await httpRequest(`${server.baseUrl}/api/v1/jobs/${jobId}`, { method: 'DELETE', headers: { authorization: server.managedToken } });
    } else {
      const waitStart = performance.now();
      let end = await status();
      while (end.status === 'queued' || end.status === 'running') {
        await new Promise((resolve) => setTimeout(resolve, 2000));
        end = await status();
      }
      console.log(`the job ended ${end.status} (${JSON.stringify(end.counts)}) ${((performance.now() - waitStart) / 1000).toFixed(1)} s after the clients stopped (load ${load()})`);
    }
  }
} finally {
  await server.stop();
  await rm(work, { recursive: true, force: true });
}
