/**
 * A soak: a fresh server (compiled and started as `npm run bench` does, default settings, so
 * the default memory budget) under several clients at once for a number of minutes, its RSS
 * sampled every half second. Prints the peak (VmHWM) and RSS over time, RSS 60 s after the
 * clients stop against before they started (and what holds it then: threads, memory by kind,
 * the largest anonymous mappings), the answers by status and code (and whether every
 * 503 carried Retry-After), the ordinary photos' latency (median, p95) against the same
 * ordinary clients running alone just before (and one of them by itself), the Server-Timing
 * stages of every kind answered 200 (where a large photo's time went: memory, HEIC decode,
 * queue), and how long a request with a private `bg_image_url` (a 0.7 MP photo) takes to be
 * refused, on the idle server and during the soak.
 *
 * Without `--hostile`: only the ordinary clients (`--photo-clients`, a 0.7 MP JPEG each).
 * With `--hostile`, beside them `--heic-clients` clients each sending, in turn, a 49 MP HEIC,
 * another, a 50 MP JPEG as remove.bg's `format=zip` at full size, a 49 MP HEIC with a shadow,
 * and a request with a private `bg_image_url` (refused with 400, before the model). A client
 * answered 503 waits for its Retry-After (at most 5 s) before its next request.
 *
 * The photos are made once from a fixture photo (the HEIC with Debian's heif-enc, from
 * libheif-examples) and kept in `data/heic-memory/`, as `scripts/heic-memory.ts` keeps them.
 * Only 127.0.0.1 is contacted.
 *
 *   npm run soak -- --minutes 10 --hostile [--heic-clients 4] [--photo-clients 2] [--settle 60]
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { assembleModel } from '../src/model/assemble-model.js';
import { httpRequest, type HttpAnswer } from './bench/http-load.js';
import { describeMachine } from './bench/machine.js';
import { compileServer, startCutoutServer, type CutoutServer } from './lib/server-process.js';
import { percentile } from './bench/stats.js';
import { multipartBody, type FormPart } from './lib/multipart-body.js';
import { scaledPhoto } from './lib/scaled-photo.js';
import { memoryMiB } from './lib/process-memory.js';
import { threadsOf } from './lib/proc-threads.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    hostile: { type: 'boolean', default: false },
    'heic-clients': { type: 'string', default: '4' },
    'photo-clients': { type: 'string', default: '2' },
    'alone-seconds': { type: 'string', default: '45' },
    settle: { type: 'string', default: '60' },
    photo: { type: 'string', default: join(ROOT, '../shared/fixtures/photos/animal-3.jpg') },
  },
});
const minutes = Number(values.minutes);
const settleSeconds = Number(values.settle);
const heicClients = values.hostile ? Number(values['heic-clients']) : 0;
const photoClients = Number(values['photo-clients']);

/** The soak's photo scaled to `width × height`, as a JPEG or an HEIC (made once). */
const makePhoto = (width: number, height: number, heic: boolean) => scaledPhoto(ROOT, values.photo, width, height, heic ? 'heic' : 'jpeg');

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

interface Outcome {
  kind: string;
  status: number;
  code: string;
  /** A 200's Server-Timing: milliseconds by stage. */
  stages?: Record<string, number>;
  /** The 503's Retry-After in seconds; undefined when it had none. */
  retryAfter?: number;
  ms: number;
  /** When it was sent (performance.now()). */
  start: number;
}

/** One request as a client sends it: where, which headers, which body. */
type Shot = { kind: string; path: string; headers: Record<string, string>; body: Buffer };

function nativeUpload(server: CutoutServer, kind: string, bytes: Buffer, name: string, fields: FormPart[] = []): Shot {
  const { body, contentType } = multipartBody([{ name: 'file', filename: name, contentType: 'application/octet-stream', data: bytes }, ...fields]);
  return { kind, path: '/api/v1/background/remove/multipart', headers: { authorization: server.managedToken, 'content-type': contentType, accept: 'image/png' }, body };
}

function removeBgUpload(key: string, kind: string, bytes: Buffer, fields: FormPart[]): Shot {
  const { body, contentType } = multipartBody([{ name: 'image_file', filename: 'photo.jpg', contentType: 'image/jpeg', data: bytes }, ...fields]);
  return { kind, path: '/v1.0/removebg', headers: { 'x-api-key': key, 'content-type': contentType }, body };
}

async function send(server: CutoutServer, shot: Shot): Promise<Outcome> {
  const start = performance.now();
  let answer: HttpAnswer;
  try {
    answer = await httpRequest(`${server.baseUrl}${shot.path}`, { method: 'POST', headers: shot.headers, body: shot.body, timeoutMs: 300_000 });
  } catch (error) {
    return { kind: shot.kind, status: 0, code: `connection: ${(error as Error).message}`, ms: 0, start };
  }
  let code = '';
  if (answer.status !== 200) {
    try {
      const body = JSON.parse(answer.body.toString()) as { code?: string; errors?: { code: string }[] };
      code = body.code ?? body.errors?.[0]?.code ?? '';
    } catch {
      code = 'unparsed';
    }
  }
  const retryAfter = answer.headers['retry-after'];
  const timing = answer.headers['server-timing'];
  const stages = typeof timing === 'string' ? Object.fromEntries(timing.split(', ').map((entry) => [entry.split(';')[0], Number(entry.split('dur=')[1])])) : undefined;
  return { kind: shot.kind, status: answer.status, code, retryAfter: retryAfter === undefined ? undefined : Number(retryAfter), ms: answer.ms, stages, start };
}

/** A client sending its shots in turn until `until`, pausing after a 503 as Retry-After asks. */
async function client(server: CutoutServer, shots: Shot[], until: number, outcomes: Outcome[]): Promise<void> {
  for (let i = 0; performance.now() < until; i++) {
    const outcome = await send(server, shots[i % shots.length]);
    outcomes.push(outcome);
    if (outcome.status === 503) await sleep(1000 * Math.min(5, Math.max(1, outcome.retryAfter ?? 1)));
  }
}

/**
 * What the server holds once the soak is over: its threads by name (an HEIC thread still
 * alive, say), its memory by kind from smaps_rollup, and its largest anonymous mappings
 * (V8's heaps, the C library's arenas and the model's arena are anonymous).
 */
async function whatStays(pid: number): Promise<string> {
  const names = new Map<string, number>();
  for (const { name } of await threadsOf(pid).catch(() => [])) names.set(name, (names.get(name) ?? 0) + 1);
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? NaN);
  const smaps = await readFile(`/proc/${pid}/smaps`, 'utf8').catch(() => '');
  // Each anonymous mapping's resident and mapped KiB: WebAssembly's memory maps GiBs and holds a part.
  const anonymous: { rss: number; size: number }[] = [];
  for (const block of smaps.split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/)) {
    const header = block.slice(0, block.indexOf('\n'));
    const rss = Number(/^Rss:\s+(\d+)/m.exec(block)?.[1] ?? 0);
    const size = Number(/^Size:\s+(\d+)/m.exec(block)?.[1] ?? 0);
    if (header.trim().split(/\s+/).length <= 5 && rss > 0) anonymous.push({ rss, size });
  }
  anonymous.sort((a, b) => b.rss - a.rss);
  const mb = (k: number) => (k / 1024).toFixed(0);
  const mapping = ({ rss, size }: { rss: number; size: number }) => (size > rss * 1.5 ? `${mb(rss)} (of ${mb(size)} mapped)` : mb(rss));
  return (
    `threads ${[...names].map(([name, count]) => `${name} × ${count}`).join(', ')}; ` +
    `RSS ${mb(kb('Rss'))} MiB: anonymous ${mb(kb('Anonymous'))}, file ${mb(kb('Rss') - kb('Anonymous'))}; ` +
    `largest anonymous mappings ${anonymous.slice(0, 8).map(mapping).join(', ')} MiB (${anonymous.length} in all, ${mb(anonymous.reduce((sum, { rss }) => sum + rss, 0))} MiB)`
  );
}

/**
 * The server's event loop delay since the last call, from prom-client's default metrics
 * (`nodejs_eventloop_lag_*`, a 10 ms resolution; each scrape starts a new histogram), in ms.
 */
async function eventLoopDelay(server: CutoutServer): Promise<{ p50: number; p99: number; max: number }> {
  const text = (await httpRequest(`${server.baseUrl}/metrics`, { timeoutMs: 10_000 })).body.toString();
  const ms = (name: string) => 1000 * Number(new RegExp(`^nodejs_eventloop_lag_${name}_seconds (\\S+)`, 'm').exec(text)?.[1] ?? NaN);
  return { p50: ms('p50'), p99: ms('p99'), max: ms('max') };
}

const buildDir = join(ROOT, 'bench/.build');
const warning = (await compileServer(ROOT, buildDir)).warning;
if (warning) console.warn(warning);
await assembleModel(join(ROOT, 'data'));
const ordinary = await makePhoto(1000, 700, false);
const heic = values.hostile ? await makePhoto(7000, 7000, true) : Buffer.alloc(0);
const zipPhoto = values.hostile ? await makePhoto(8000, 6250, false) : Buffer.alloc(0);
const machine = describeMachine();

const work = await mkdtemp(join(tmpdir(), 'cutout-soak-'));
const server = await startCutoutServer({ root: ROOT, buildDir, dataDir: join(work, 'data'), modelsDir: join(ROOT, 'data/models'), threads: Number(process.env.CUTOUT_INFERENCE_THREADS) || availableParallelism() });
const mib = (field: 'VmRSS' | 'VmHWM') => memoryMiB(server.pid, field);
try {
  // remove.bg's key is the Token ID.
  const key = server.tokenId;
  const ordinaryShot = nativeUpload(server, 'ordinary 0.7 MP', ordinary, 'photo.jpg');
  const hostileShots: Shot[] = [
    nativeUpload(server, '49 MP HEIC', heic, 'large.heic'),
    nativeUpload(server, '49 MP HEIC', heic, 'large.heic'),
    removeBgUpload(key, '50 MP zip', zipPhoto, [{ name: 'size', data: 'full' }, { name: 'format', data: 'zip' }]),
    nativeUpload(server, '49 MP HEIC + shadow', heic, 'large.heic', [{ name: 'add_shadow', data: 'true' }]),
    nativeUpload(server, 'private bg_image_url', ordinary, 'photo.jpg', [{ name: 'bg_image_url', data: 'http://10.0.0.1/bg.png' }]),
  ];

  console.log(`# Soak: ${minutes} min, ${heicClients} hostile clients, ${photoClients} ordinary clients`);
  console.log(`${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Node ${machine.node}; load average at start ${machine.loadAverage.join(' ')}; precision ${server.precision}`);
  await send(server, ordinaryShot); // warms the model
  // "Alone" is the same ordinary clients without the hostile ones, as the target compares them;
  // one ordinary client by itself is printed beside it.
  const aloneFor = 1000 * Number(values['alone-seconds']);
  const single: Outcome[] = [];
  await client(server, [ordinaryShot], performance.now() + aloneFor, single);
  const alone: Outcome[] = [];
  const aloneUntil = performance.now() + aloneFor;
  await Promise.all(Array.from({ length: photoClients }, () => client(server, [ordinaryShot], aloneUntil, alone)));
  const loadAlone = load();
  const refusedAlone: Outcome[] = [];
  for (let i = 0; i < 20; i++) refusedAlone.push(await send(server, hostileShots[4]));
  const before = await mib('VmRSS');
  await writeFile(`/proc/${server.pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
  await eventLoopDelay(server); // starts the soak's histogram

  // RSS every 100 ms (statm's second field, in pages); at each new high past 400 MiB above
  // before, what the mappings held then, to tell whose memory the peak is.
  const samples: { at: number; rss: number }[] = [];
  const highs: { at: number; rss: number; held: string }[] = [];
  const pageMiB = 4096 / 2 ** 20;
  const sampler = setInterval(() => {
    const at = performance.now();
    void readFile(`/proc/${server.pid}/statm`, 'utf8').then(async (statm) => {
      const rss = Number(statm.split(' ')[1]) * pageMiB;
      const highest = samples.reduce((max, sample) => Math.max(max, sample.rss), 0);
      samples.push({ at, rss });
      const last = highs.at(-1);
      if (rss > highest && rss > before + 400 && (!last || at - last.at >= 1000)) highs.push({ at, rss, held: await whatStays(server.pid) });
    }, () => {});
  }, 100);
  const loads: string[] = [];
  const loadSampler = setInterval(() => loads.push(load()), 60_000);
  const until = performance.now() + minutes * 60_000;
  const outcomes: Outcome[] = [];
  await Promise.all([
    ...Array.from({ length: heicClients }, (_, i) => client(server, [...hostileShots.slice(i % hostileShots.length), ...hostileShots.slice(0, i % hostileShots.length)], until, outcomes)),
    ...Array.from({ length: photoClients }, () => client(server, [ordinaryShot], until, outcomes)),
  ]);
  clearInterval(loadSampler);
  const delay = await eventLoopDelay(server);
  const loadAtEnd = load();
  const peak = await mib('VmHWM');
  const atEnd = await mib('VmRSS');
  await sleep(settleSeconds * 1000);
  clearInterval(sampler);
  const settled = await mib('VmRSS');
  const afterwards = await whatStays(server.pid);

  const f = (n: number) => n.toFixed(0);
  const seconds = (list: Outcome[], p: number) => (list.length === 0 ? '–' : (percentile(list.map((o) => o.ms), p) / 1000).toFixed(2));
  console.log(`\nRSS: before ${f(before)} MiB; peak (VmHWM) ${f(peak)} MiB; highest sample ${f(Math.max(...samples.map((sample) => sample.rss)))} MiB; at the end ${f(atEnd)} MiB; ${settleSeconds} s later ${f(settled)} MiB (${(((settled - before) / before) * 100).toFixed(1)} % from before)`);
  console.log(`load average: alone ${loadAlone}; each minute ${loads.join(' | ')}; at the end ${loadAtEnd}`);
  const counts = new Map<string, number>();
  for (const o of outcomes) {
    const label = `${o.kind}: ${o.status}${o.code ? ` ${o.code}` : ''}${o.status === 503 ? (o.retryAfter === undefined ? ' (NO Retry-After)' : ' (Retry-After)') : ''}`;
    counts.set(label, (counts.get(label) ?? 0) + 1);
  }
  console.log('\nanswers:');
  for (const [label, count] of [...counts].sort()) console.log(`  ${label} × ${count}`);
  const valid = outcomes.filter((o) => o.kind !== 'private bg_image_url');
  const unexpected = valid.filter((o) => o.status !== 200 && !(o.status === 503 && o.retryAfter !== undefined));
  console.log(`valid requests answered other than 200 or 503 with Retry-After: ${unexpected.length}`);
  const refused = outcomes.filter((o) => o.kind === 'private bg_image_url');
  const ms = (list: Outcome[], p: number) => (list.length === 0 ? '–' : percentile(list.map((o) => o.ms), p).toFixed(1));
  console.log(
    `private bg_image_url refused (${[...new Set(refusedAlone.map((o) => `${o.status} ${o.code}`))].join(', ')}): on an idle server median ${ms(refusedAlone, 50)} ms, max ${ms(refusedAlone, 100)} ms; ` +
      `beside the others median ${ms(refused, 50)} ms, p95 ${ms(refused, 95)} ms, max ${ms(refused, 100)} ms`,
  );
  console.log(`the server's event loop delay during the soak: median ${delay.p50.toFixed(1)} ms, p99 ${delay.p99.toFixed(1)} ms, max ${delay.max.toFixed(1)} ms`);
  const ordinaryOk = outcomes.filter((o) => o.kind === 'ordinary 0.7 MP' && o.status === 200);
  const aloneOk = alone.filter((o) => o.status === 200);
  const singleOk = single.filter((o) => o.status === 200);
  console.log(
    `ordinary photos: one client by itself median ${seconds(singleOk, 50)} s, p95 ${seconds(singleOk, 95)} s; ` +
      `the ${photoClients} ordinary clients alone ${aloneOk.length} answers, median ${seconds(aloneOk, 50)} s, p95 ${seconds(aloneOk, 95)} s; ` +
      `beside the others ${ordinaryOk.length} answers, median ${seconds(ordinaryOk, 50)} s, p95 ${seconds(ordinaryOk, 95)} s ` +
      `(${(percentile(ordinaryOk.map((o) => o.ms), 95) / percentile(aloneOk.map((o) => o.ms), 95)).toFixed(2)}× alone)`,
  );
  // Where the slowest ordinary photos spent their time, by Server-Timing's stages (the rest is transfer and the routes).
  const slowest = (list: Outcome[]) => list.filter((o) => o.ms >= percentile(list.map((each) => each.ms), 90));
  const stageMedians = (list: Outcome[]) =>
    Object.keys(list[0]?.stages ?? {})
      .map((stage) => `${stage} ${percentile(list.map((o) => o.stages?.[stage] ?? 0), 50).toFixed(0)}`)
      .join(', ');
  console.log(`their stages in ms (median of the slowest 10 %): alone ${stageMedians(slowest(aloneOk))}; beside the others ${stageMedians(slowest(ordinaryOk))}`);
  for (const kind of new Set(outcomes.filter((o) => o.kind !== 'ordinary 0.7 MP' && o.status === 200).map((o) => o.kind))) {
    const answered = outcomes.filter((o) => o.kind === kind && o.status === 200);
    console.log(`${kind} answered 200: ${answered.length}, median ${seconds(answered, 50)} s, max ${seconds(answered, 100)} s; stages in ms (median): ${stageMedians(answered)}`);
  }
  // The three highest samples at least 10 s apart, with the requests in flight then.
  const peaks: typeof samples = [];
  for (const sample of [...samples].sort((a, b) => b.rss - a.rss)) {
    if (peaks.length === 3) break;
    if (peaks.every((peak) => Math.abs(peak.at - sample.at) > 10_000)) peaks.push(sample);
  }
  const soakStart = until - minutes * 60_000;
  console.log('\nthe highest samples:');
  for (const peak of peaks) {
    const inFlight = outcomes.filter((o) => o.start <= peak.at && peak.at <= o.start + o.ms);
    console.log(`  ${f(peak.rss)} MiB at ${((peak.at - soakStart) / 1000).toFixed(1)} s, in flight: ${inFlight.map((o) => `${o.kind} (${((peak.at - o.start) / 1000).toFixed(1)} of ${(o.ms / 1000).toFixed(1)} s, ${o.status})`).join('; ')}`);
  }
  for (const high of highs.slice(-3)) console.log(`  held at a new high (${f(high.rss)} MiB, ${((high.at - soakStart) / 1000).toFixed(1)} s): ${high.held}`);
  console.log(`\n${settleSeconds} s after: ${afterwards}`);
} finally {
  await server.stop();
  await rm(work, { recursive: true, force: true });
}
