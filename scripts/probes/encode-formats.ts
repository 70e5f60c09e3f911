/**
 * `npx tsx scripts/probes/encode-formats.ts [PHOTO…] [--sizes 2.5,10.7] [--rounds 7] [--only REGEX] [--concurrency N] [--memory]`:
 * what answering in WebP and JPEG costs, beside today's PNG. Each photo (default: a lion, a
 * person and a car from ../shared/fixtures/photos) is scaled with sharp (Lanczos) to each size
 * and cut out by Cutout's own pipeline (the real model, refined), so the encoders see a real
 * answer: RGBA with its invisible pixels black. From it: the cut-out on white (RGB, what a
 * JPEG answer holds) and the alpha alone (a `channels: alpha` answer).
 *
 * The cut-outs are kept in os.tmpdir()/cutout-encode-probe (delete it to make them again).
 *
 * Every candidate encodes the same raw pixels, one encode at a time as the finish thread runs
 * them, in rounds whose order rotates, after a warm-up; printed per photo and size: the
 * process's CPU ms over the encode (it counts every thread, and is what another agent's load
 * on a shared machine distorts least) and wall ms, each as median (min–max), bytes, and for
 * what is lossy the error of the decoded result against its source: PSNR over the visible
 * pixels (alpha > 0), and for RGBA the alpha's mean and largest |Δ|. `--memory` instead runs
 * each candidate once in a process of its own and prints how far the encode raised the peak RSS.
 * Run it with the server's malloc settings (MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=4194304).
 * The figures behind the WebP and JPEG settings; see docs/internals/performance.md.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CompressionType, FilterType, Transformer } from '@napi-rs/image';
import sharp, { type JpegOptions, type PngOptions, type WebpOptions } from 'sharp';
import { assembleModel } from '../../src/model/assemble-model.js';
import { loadSegmenter } from '../../src/model/onnx-segmenter.js';
import { encodePng } from '../../src/pipeline/encode.js';
import { FinishThread } from '../../src/pipeline/finish-thread.js';
import { removeBackground } from '../../src/pipeline/remove-background.js';
import { makeBenchImages } from '../bench/inputs.js';
import { describeMachine } from '../bench/machine.js';
import { median } from '../bench/stats.js';

const PHOTOS = ['animal-3.jpg', 'test_human_images/julia+trotti_17.jpg', 'car-2.jpg'].map((name) => `../shared/fixtures/photos/${name}`);
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    sizes: { type: 'string', default: '2.5,10.7' },
    rounds: { type: 'string', default: '7' },
    only: { type: 'string' },
    concurrency: { type: 'string' },
    memory: { type: 'boolean', default: false },
    'measure-one': { type: 'string' }, // internal: the child process of --memory
  },
});
if (values.concurrency) sharp.concurrency(Number(values.concurrency));
const CACHE = join(tmpdir(), 'cutout-encode-probe');

/** One answer's pixels in the three forms an encoder may get. */
interface Pixels {
  width: number;
  height: number;
  rgba: Buffer;
  /** The cut-out flattened onto white. */
  rgb: Buffer;
  alpha: Buffer;
}
type Kind = 'rgba' | 'rgb' | 'alpha';
interface Candidate {
  name: string;
  kind: Kind;
  encode: (pixels: Pixels) => Promise<Buffer>;
  /** Left out of larger images. */
  maxMegapixels?: number;
}

const raw = ({ width, height }: Pixels, channels: 1 | 3 | 4) => ({ raw: { width, height, channels } });
/** A PGM or PPM around raw pixels: how @napi-rs/image takes one or three channels (fromRgbaPixels takes four). */
const pnm = ({ width, height }: Pixels, data: Buffer, channels: 1 | 3) => Buffer.concat([Buffer.from(`P${channels === 1 ? 5 : 6}\n${width} ${height}\n255\n`), data]);
const fast = { compressionType: CompressionType.Fast, filterType: FilterType.Up };
const CHANNELS = { rgba: 4, rgb: 3, alpha: 1 } as const;
const settings = (options: object) => JSON.stringify(options).replace(/[{}"]/g, '').replace(/,/g, ', ').replace(/:/g, ': ');
const sharpWebp = (kind: Kind, options: WebpOptions): Candidate => ({
  name: `sharp webp ${settings(options)}${kind === 'rgba' ? '' : ` (${kind === 'rgb' ? 'RGB' : 'grey'})`}`,
  kind,
  encode: (p) => sharp(p[kind], raw(p, CHANNELS[kind])).webp(options).toBuffer(),
});
const sharpJpeg = (kind: 'rgb' | 'alpha', options: JpegOptions): Candidate => ({
  name: `sharp jpeg ${settings(options)}${kind === 'alpha' ? ' (grey)' : ''}`,
  kind,
  encode: (p) => sharp(p[kind], raw(p, CHANNELS[kind])).jpeg(options).toBuffer(),
});
const sharpPng = (options: PngOptions): Candidate => ({ name: `sharp png ${settings(options)} (grey)`, kind: 'alpha', encode: (p) => sharp(p.alpha, raw(p, 1)).png(options).toBuffer() });

const ALL_CANDIDATES: Candidate[] = [
  { name: 'PNG fast (today: encodePng)', kind: 'rgba', encode: (p) => encodePng({ data: p.rgba, width: p.width, height: p.height, channels: 4 }) },
  { name: "PNG small (encodePng 'small')", kind: 'rgba', encode: (p) => encodePng({ data: p.rgba, width: p.width, height: p.height, channels: 4 }, 'small') },
  ...[75, 80, 85, 90].flatMap((quality) => [0, 1].map((effort) => sharpWebp('rgba', { quality, effort }))),
  ...[2, 4].map((effort) => sharpWebp('rgba', { quality: 80, effort })),
  ...[0, 1, 4].map((effort) => sharpWebp('rgba', { lossless: true, effort })),
  // Seconds at 2.5 MP already, and larger than lossy WebP at any quality: left out of larger sizes.
  { ...sharpWebp('rgba', { nearLossless: true, quality: 60, effort: 1 }), maxMegapixels: 5 },
  { name: 'napi webp(80)', kind: 'rgba', encode: (p) => Transformer.fromRgbaPixels(p.rgba, p.width, p.height).webp(80) },
  { name: 'napi webpLossless()', kind: 'rgba', encode: (p) => Transformer.fromRgbaPixels(p.rgba, p.width, p.height).webpLossless() },

  { name: 'napi png fast, Up (RGB via PPM)', kind: 'rgb', encode: (p) => new Transformer(pnm(p, p.rgb, 3)).png(fast) },
  ...[80, 85, 90].flatMap((quality) => [false, true].map((mozjpeg) => sharpJpeg('rgb', { quality, mozjpeg }))),
  ...[85, 90].map((quality): Candidate => ({ name: `napi jpeg(${quality}) (via PPM)`, kind: 'rgb', encode: (p) => new Transformer(pnm(p, p.rgb, 3)).jpeg(quality) })),
  sharpWebp('rgb', { quality: 80, effort: 0 }),

  { name: 'napi png fast, Up (grey via PGM)', kind: 'alpha', encode: (p) => new Transformer(pnm(p, p.alpha, 1)).png(fast) },
  ...[1, 6].map((compressionLevel) => sharpPng({ compressionLevel })),
  sharpPng({ compressionLevel: 6, adaptiveFiltering: true }),
  ...[0, 1, 4].map((effort) => sharpWebp('alpha', { lossless: true, effort })),
  ...[90, 100].map((quality) => sharpJpeg('alpha', { quality })),
];
const CANDIDATES = ALL_CANDIDATES.filter((candidate) => !values.only || new RegExp(values.only).test(candidate.name));

const cacheKey = (photo: string, megapixels: number) => join(CACHE, `${basename(photo).replace(/\W+/g, '-')}-${megapixels}mp`);

/** The cut-out of `photo` at about `megapixels`, made once and kept in the temporary directory. */
async function cutoutPixels(photo: string, megapixels: number, finish: () => Promise<{ finisher: FinishThread; segmenter: Awaited<ReturnType<typeof loadSegmenter>> }>): Promise<Pixels> {
  const key = cacheKey(photo, megapixels);
  if (!existsSync(`${key}.json`)) {
    await mkdir(CACHE, { recursive: true });
    const [image] = await makeBenchImages(photo, [megapixels], CACHE);
    const { finisher, segmenter } = await finish();
    const { bytes } = await removeBackground(image.bytes, { segmenter, finisher, maxPixels: 1e9 });
    const { data: rgba, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    const { width, height } = info;
    const rgb = await sharp(rgba, { raw: { width, height, channels: 4 } }).flatten({ background: '#ffffff' }).raw().toBuffer();
    const alpha = await sharp(rgba, { raw: { width, height, channels: 4 } }).extractChannel(3).raw().toBuffer();
    await Promise.all([writeFile(`${key}.rgba`, rgba), writeFile(`${key}.rgb`, rgb), writeFile(`${key}.alpha`, alpha), writeFile(`${key}.json`, JSON.stringify({ width, height }))]);
  }
  const { width, height } = JSON.parse(await readFile(`${key}.json`, 'utf8')) as { width: number; height: number };
  const [rgba, rgb, alpha] = await Promise.all(['rgba', 'rgb', 'alpha'].map((kind) => readFile(`${key}.${kind}`)));
  return { width, height, rgba, rgb, alpha };
}

/**
 * The decoded result's error against its source: PSNR over the visible pixels' colour (all of
 * a mask's), the largest |Δ| of a mask and, for RGBA, the alpha's mean and largest |Δ| over all
 * pixels; `exact` for a lossless result.
 */
async function errorOf(candidate: Candidate, pixels: Pixels, encoded: Buffer): Promise<string> {
  const { kind } = candidate;
  const decoded = kind === 'rgba' ? sharp(encoded).ensureAlpha() : kind === 'rgb' ? sharp(encoded).removeAlpha() : sharp(encoded).extractChannel(0);
  const data = await decoded.raw().toBuffer();
  const source = pixels[kind];
  const channels = CHANNELS[kind];
  const colours = Math.min(channels, 3);
  let [squared, counted, largest, alphaSum, alphaLargest] = [0, 0, 0, 0, 0];
  for (let i = 0; i < pixels.width * pixels.height; i++) {
    if (kind === 'rgba') {
      const delta = Math.abs(data[i * 4 + 3] - source[i * 4 + 3]);
      alphaSum += delta;
      alphaLargest = Math.max(alphaLargest, delta);
    }
    if (kind !== 'alpha' && pixels.alpha[i] === 0) continue;
    for (let c = 0; c < colours; c++) {
      const delta = data[i * channels + c] - source[i * channels + c];
      squared += delta * delta;
      largest = Math.max(largest, Math.abs(delta));
    }
    counted += colours;
  }
  if (squared === 0 && alphaLargest === 0) return 'exact';
  const psnr = `${(10 * Math.log10((255 * 255 * counted) / squared)).toFixed(1)} dB`;
  // |Δ| written without its bars, which would split the Markdown table's cell.
  if (kind === 'alpha') return `${psnr}, max Δ ${largest}`;
  return kind === 'rgba' ? `${psnr}; α Δ mean ${(alphaSum / (pixels.width * pixels.height)).toFixed(3)}, max ${alphaLargest}` : psnr;
}

const candidatesFor = ({ width, height }: Pixels) => CANDIDATES.filter((candidate) => width * height <= (candidate.maxMegapixels ?? Infinity) * 1e6);

interface Sample {
  wall: number[];
  cpu: number[];
  bytes: number;
  error: string;
}

async function encodeOnce(candidate: Candidate, pixels: Pixels): Promise<{ wall: number; cpu: number; encoded: Buffer }> {
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  const encoded = await candidate.encode(pixels);
  const wall = performance.now() - start;
  const cpu = process.cpuUsage(cpuBefore);
  return { wall, cpu: (cpu.user + cpu.system) / 1000, encoded };
}

async function measure(pixels: Pixels, rounds: number): Promise<Map<Candidate, Sample>> {
  const candidates = candidatesFor(pixels);
  const samples = new Map<Candidate, Sample>();
  for (const candidate of candidates) {
    const { encoded } = await encodeOnce(candidate, pixels); // warm-up, and the error figure
    samples.set(candidate, { wall: [], cpu: [], bytes: encoded.length, error: await errorOf(candidate, pixels, encoded) });
  }
  for (let round = 0; round < rounds; round++) {
    // Each round starts elsewhere in the list and odd rounds run it backwards, so no
    // candidate always follows the same one or always meets the machine's same moment.
    const shift = Math.floor((round * candidates.length) / rounds);
    const order = [...candidates.slice(shift), ...candidates.slice(0, shift)];
    if (round % 2 === 1) order.reverse();
    for (const candidate of order) {
      const { wall, cpu } = await encodeOnce(candidate, pixels);
      samples.get(candidate)!.wall.push(wall);
      samples.get(candidate)!.cpu.push(cpu);
    }
  }
  return samples;
}

const ms = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
const size = (bytes: number) => (bytes >= 1e6 ? `${(bytes / 1e6).toFixed(2)} MB` : `${(bytes / 1e3).toFixed(0)} kB`);

function printTable(label: string, samples: Map<Candidate, Sample>): void {
  console.log(`\n### ${label}\n`);
  console.log('| input | encoder, settings | CPU ms: median (min–max) | wall ms: median (min–max) | bytes | error (visible pixels) |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  const spread = (values: number[]) => `${ms(median(values))} (${ms(Math.min(...values))}–${ms(Math.max(...values))})`;
  for (const [candidate, { wall, cpu, bytes, error }] of samples) {
    console.log(`| ${candidate.kind} | ${candidate.name} | ${spread(cpu)} | ${spread(wall)} | ${size(bytes)} | ${error} |`);
  }
}

/** `--memory`'s child: one encode of one candidate; prints how far it raised the peak RSS (MiB). */
async function measureOne(name: string, key: string): Promise<void> {
  const candidate = CANDIDATES.find((c) => c.name === name)!;
  const { width, height } = JSON.parse(await readFile(`${key}.json`, 'utf8')) as { width: number; height: number };
  const data = await readFile(`${key}.${candidate.kind}`);
  const pixels: Pixels = { width, height, rgba: data, rgb: data, alpha: data };
  const before = process.resourceUsage().maxRSS;
  const { wall } = await encodeOnce(candidate, pixels);
  console.log(JSON.stringify({ peakMiB: (process.resourceUsage().maxRSS - before) / 1024, wall }));
}

if (values['measure-one']) {
  await measureOne(values['measure-one'], positionals[0]);
} else {
  const photos = positionals.length > 0 ? positionals : PHOTOS;
  const sizes = values.sizes.split(',').map(Number);
  let loaded: Promise<{ finisher: FinishThread; segmenter: Awaited<ReturnType<typeof loadSegmenter>> }> | undefined;
  const finish = () =>
    (loaded ??= assembleModel(join(tmpdir(), 'cutout-test-model')).then(async (path) => ({ finisher: new FinishThread(), segmenter: await loadSegmenter(path, { threads: 2 }) })));
  const machine = describeMachine();
  const malloc = Object.entries(process.env).filter(([name]) => name.startsWith('MALLOC_')).map(([name, value]) => `${name}=${value}`).join(' ') || 'glibc defaults';
  console.log(`${machine.cpu}, ${availableParallelism()} cores, load ${machine.loadAverage.join(' ')}; node ${machine.node}; sharp ${sharp.versions.sharp} (libvips ${sharp.versions.vips}, libwebp ${sharp.versions.webp}, mozjpeg ${sharp.versions.mozjpeg}), sharp.concurrency() ${sharp.concurrency()}; ${malloc}`);
  for (const megapixels of sizes) {
    for (const photo of photos) {
      const pixels = await cutoutPixels(photo, megapixels, finish);
      const visible = pixels.alpha.filter((a) => a > 0).length / pixels.alpha.length;
      const label = `${basename(photo)} at ${pixels.width}×${pixels.height} (${((pixels.width * pixels.height) / 1e6).toFixed(1)} MP, ${(100 * visible).toFixed(0)} % visible)`;
      if (values.memory) {
        const key = cacheKey(photo, megapixels);
        console.log(`\n### Peak RSS growth during one encode: ${label}\n\n| encoder, settings | MiB above the peak before it (0: stayed under) | wall ms |\n| --- | --- | --- |`);
        for (const candidate of candidatesFor(pixels)) {
          const args = [...process.execArgv, fileURLToPath(import.meta.url), '--measure-one', candidate.name, key, ...(values.concurrency ? ['--concurrency', values.concurrency] : [])];
          const child = spawnSync(process.execPath, args, { encoding: 'utf8' });
          const { peakMiB, wall } = JSON.parse(child.stdout) as { peakMiB: number; wall: number };
          console.log(`| ${candidate.name} | ${peakMiB.toFixed(0)} | ${ms(wall)} |`);
        }
      } else {
        printTable(label, await measure(pixels, Number(values.rounds)));
      }
    }
  }
  if (loaded) {
    const { finisher, segmenter } = await loaded;
    await Promise.all([finisher.close(), segmenter.close()]);
  }
}
