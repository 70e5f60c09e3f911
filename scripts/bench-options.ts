/**
 * The output options' bench, and the default answer against another checkout's:
 *
 *   npm run bench:options -- [--before DIR] [--sizes 2.5,10.7] [--runs 7] [--burst 16] [--photo FILE]
 *
 * Starts this checkout's server (compiled, as `npm run bench` does) and, with `--before`,
 * the server of another checkout of Cutout (a worktree at an older commit) beside it. For each
 * size, one request at a time, alternating: the default request to each server (its answers
 * must be byte-identical), then this server with each option (`max_width` 1024, raw bytes,
 * WebP, JPEG, the mask alone, crop, a 20-pixel outline). It prints medians and spreads, the answers' sizes, and
 * the stage times of Server-Timing. `--burst N` then sends N concurrent requests of the
 * largest size to each server in turn, twice, and reads each one's peak memory (VmHWM).
 * Figures from a shared machine: read the ratios, taken in the same rounds.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { assembleModel } from '../src/model/assemble-model.js';
import { httpRequest, parseServerTiming, type HttpAnswer } from './bench/http-load.js';
import { makeBenchImages, type BenchImage } from './bench/inputs.js';
import { describeMachine } from './bench/machine.js';
import { readProcessMemory, resetPeakRss } from './lib/process-memory.js';
import { compileServer, startCutoutServer, type CutoutServer } from './lib/server-process.js';
import { formatMs, median, percentile } from './bench/stats.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    before: { type: 'string' },
    sizes: { type: 'string', default: '2.5,10.7' },
    runs: { type: 'string', default: '7' },
    burst: { type: 'string', default: '0' },
    photo: { type: 'string', default: join(ROOT, '../shared/fixtures/photos/animal-3.jpg') },
  },
});
const sizes = args.sizes.split(',').map(Number);
const runs = Number(args.runs);
const burst = Number(args.burst);
const threads = Number(process.env.CUTOUT_INFERENCE_THREADS) || availableParallelism();

/** A request variant: extra JSON fields and headers on top of the image. */
interface Variant {
  name: string;
  fields: Record<string, unknown>;
  headers?: Record<string, string>;
}

const VARIANTS: Variant[] = [
  { name: 'default (JSON, PNG)', fields: {} },
  { name: 'raw PNG (Accept: image/png)', fields: {}, headers: { accept: 'image/png' } },
  { name: 'max_width 1024', fields: { max_width: 1024 }, headers: { accept: 'image/*' } },
  { name: 'format webp', fields: { format: 'webp' }, headers: { accept: 'image/*' } },
  { name: 'format jpg', fields: { format: 'jpg' }, headers: { accept: 'image/*' } },
  { name: 'channels alpha', fields: { channels: 'alpha' }, headers: { accept: 'image/*' } },
  { name: 'crop', fields: { crop: true }, headers: { accept: 'image/*' } },
  { name: 'outline 20', fields: { outline: 20 }, headers: { accept: 'image/*' } },
];

function body(image: BenchImage, fields: Record<string, unknown>): Buffer {
  const extra = Object.keys(fields).length > 0 ? `${JSON.stringify(fields).slice(1, -1)},` : '';
  return Buffer.concat([Buffer.from(`{${extra}"image_base64":"`), Buffer.from(image.bytes.toString('base64')), Buffer.from('"}')]);
}

async function send(server: CutoutServer, image: BenchImage, variant: Variant): Promise<HttpAnswer> {
  const answer = await httpRequest(`${server.baseUrl}/api/v1/background/remove/base64`, {
    method: 'POST',
    headers: { authorization: server.managedToken, 'content-type': 'application/json', ...variant.headers },
    body: body(image, variant.fields),
  });
  if (answer.status !== 200) throw new Error(`${variant.name} on ${image.label}: ${answer.status} ${answer.body.subarray(0, 200).toString()}`);
  return answer;
}

const spread = (values: number[]) => `${formatMs(median(values))} (${formatMs(percentile(values, 0))}–${formatMs(percentile(values, 100))})`;

async function main(): Promise<void> {
  const machine = describeMachine();
  console.log(`npm run bench:options -- ${process.argv.slice(2).join(' ')}\n${machine.cpu}, ${machine.cores} cores, load average ${machine.loadAverage.join(' / ')}; ${threads} inference threads\n`);
  const work = await mkdtemp(join(tmpdir(), 'cutout-bench-options-'));
  const modelPath = await assembleModel(join(ROOT, 'data'));
  const images = await makeBenchImages(args.photo, sizes, work);
  const servers: { label: string; server: CutoutServer }[] = [];
  try {
    for (const [label, root] of [['this checkout', ROOT], ...(args.before ? [['before', resolve(args.before)]] : [])] as const) {
      const buildDir = join(root, 'bench/.build');
      await compileServer(root, buildDir);
      const server = await startCutoutServer({ root, buildDir, dataDir: join(work, `data-${servers.length}`), modelsDir: dirname(modelPath), threads });
      servers.push({ label, server });
      console.log(`${label} (pid ${server.pid}, idle RSS ${((readProcessMemory(server.pid)?.rss ?? 0) / 2 ** 20).toFixed(0)} MiB)`);
    }
    const [current, before] = [servers[0].server, servers[1]?.server];
    for (const image of images) await measureSize(image, current, before);
    if (burst > 0) await measureBursts(images.at(-1)!, servers);
  } finally {
    for (const { server } of servers) await server.stop();
    await rm(work, { recursive: true, force: true });
  }
}

async function measureSize(image: BenchImage, current: CutoutServer, before: CutoutServer | undefined): Promise<void> {
  console.log(`\n## ${image.label} (${image.width}×${image.height}, ${(image.bytes.length / 1e6).toFixed(2)} MB JPEG), ${runs} rounds`);
  const ms = new Map<string, number[]>();
  const bytes = new Map<string, number>();
  const stages = new Map<string, Record<string, number[]>>();
  const note = (name: string, answer: HttpAnswer) => {
    ms.set(name, [...(ms.get(name) ?? []), answer.ms]);
    bytes.set(name, answer.body.length);
    const timings = parseServerTiming(answer.headers['server-timing']) as unknown as Record<string, number> | undefined;
    const perStage = stages.get(name) ?? {};
    for (const [stage, value] of Object.entries(timings ?? {})) perStage[stage] = [...(perStage[stage] ?? []), value];
    stages.set(name, perStage);
  };
  // Warm-up, and the default answers compared byte for byte.
  const mine = await send(current, image, VARIANTS[0]);
  if (before) {
    const theirs = await send(before, image, VARIANTS[0]);
    console.log(`default answer byte-identical to before's: ${mine.body.equals(theirs.body) ? 'yes' : `NO (${mine.body.length} against ${theirs.body.length} bytes)`}`);
  }
  for (const variant of VARIANTS.slice(1)) await send(current, image, variant);
  for (let round = 0; round < runs; round++) {
    if (before) note('before: default', await send(before, image, VARIANTS[0]));
    for (const variant of VARIANTS) note(variant.name, await send(current, image, variant));
  }
  const base = median(ms.get(VARIANTS[0].name)!);
  console.log('| request | ms, median (min–max) | ÷ default | answer bytes | decode | refine | compose | encode |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const [name, values] of ms) {
    const s = stages.get(name)!;
    const stage = (key: string) => (s[key] ? formatMs(median(s[key])) : '–');
    console.log(`| ${name} | ${spread(values)} | ${(median(values) / base).toFixed(3)} | ${bytes.get(name)} | ${stage('decode')} | ${stage('refine')} | ${stage('compose')} | ${stage('encode')} |`);
  }
}

async function measureBursts(image: BenchImage, servers: { label: string; server: CutoutServer }[]): Promise<void> {
  console.log(`\n## Memory: ${burst} concurrent ${image.label} requests, each server in turn, twice`);
  console.log('| server | round | peak RSS (VmHWM) | all answered in |');
  console.log('| --- | --- | --- | --- |');
  for (let round = 1; round <= 2; round++) {
    for (const { label, server } of servers) {
      resetPeakRss(server.pid);
      const started = performance.now();
      await Promise.all(Array.from({ length: burst }, () => send(server, image, VARIANTS[0])));
      const peak = readProcessMemory(server.pid)?.peak ?? Number.NaN;
      console.log(`| ${label} | ${round} | ${(peak / 2 ** 20).toFixed(0)} MiB | ${((performance.now() - started) / 1000).toFixed(1)} s |`);
    }
  }
}

await main();
