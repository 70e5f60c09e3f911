/**
 * What an iPhone photo costs to decode, against the same photo as a JPEG:
 *
 *   npx tsx scripts/bench-heic.ts [--photo FILE] [--megapixels 12] [--runs 5]
 *
 * The photo (default: ../shared/fixtures/photos/plants-1.jpg when it is there, else the
 * tests' ball) is scaled to `--megapixels` at 4:3 (12: 4000 × 3000, a phone's), written as a
 * JPEG (quality 90) and as an HEIC by Debian's heif-enc (quality 80; apt-get install
 * libheif-examples). Then, alternating in the same rounds after one warm-up each:
 * - `jpeg`: sharp decodes the JPEG to raw RGB (libvips, its own threads);
 * - `heic`: libheif (WebAssembly, the `libheif-js` package, one thread) decodes the HEIC to RGBA
 *   in shared memory (`heic-decoder.ts`), on this thread;
 * - `heic-thread`: Cutout's way, an HEIC thread's round trip: its header read, the decode, the
 *   pixels back (shared, not copied).
 * It prints each one's median and spread, and the ratios to `jpeg` (of the medians, and of
 * the fastest runs, which other work on a shared machine disturbs least): those are what to read.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import sharp from 'sharp';
import { decodeHeic } from '../src/pipeline/heic-decoder.js';
import { HeicThread } from '../src/pipeline/heic-thread.js';
import { makeSubjectPhoto } from '../test/helpers/images.js';
import { describeMachine } from './bench/machine.js';
import { formatMs, median } from './bench/stats.js';

const SHARED_PHOTO = new URL('../../shared/fixtures/photos/plants-1.jpg', import.meta.url).pathname;
const { values: args } = parseArgs({ options: { photo: { type: 'string' }, megapixels: { type: 'string', default: '12' }, runs: { type: 'string', default: '5' } } });
const megapixels = Number(args.megapixels);
const width = Math.round(Math.sqrt((megapixels * 1e6 * 4) / 3));
const height = Math.round((width * 3) / 4);
const dir = await mkdtemp(join(tmpdir(), 'cutout-bench-heic-'));
console.log(JSON.stringify(describeMachine()));

try {
  const source = args.photo ?? (existsSync(SHARED_PHOTO) ? SHARED_PHOTO : undefined);
  const picture = source ? sharp(source).rotate() : await makeSubjectPhoto(width, height);
  const png = join(dir, 'photo.png');
  await picture.resize(width, height, { fit: 'cover' }).png({ compressionLevel: 1 }).toFile(png);
  const jpeg = await sharp(png).jpeg({ quality: 90 }).toBuffer();
  await promisify(execFile)('heif-enc', ['-q', '80', '-o', join(dir, 'photo.heic'), png]);
  const heic = await readFile(join(dir, 'photo.heic'));
  console.log(`${source ?? 'the tests\' ball'} at ${width}×${height} (${((width * height) / 1e6).toFixed(1)} MP): JPEG ${(jpeg.length / 1e6).toFixed(2)} MB, HEIC ${(heic.length / 1e6).toFixed(2)} MB`);

  const thread = new HeicThread();
  const decoders = {
    jpeg: async () => {
      await sharp(jpeg).raw().toBuffer();
    },
    heic: async () => {
      const { width: w, height: h } = (await decodeHeic(heic, { maxPixels: 1e9, orientation: 1 })).image;
      if (w !== width || h !== height) throw new Error(`libheif decoded ${w}×${h}`);
    },
    'heic-thread': async () => {
      await thread.readable(heic, 1e9);
    },
  };
  const names = Object.keys(decoders) as (keyof typeof decoders)[];
  const times = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<keyof typeof decoders, number[]>;
  for (const name of names) await decoders[name](); // warm-up: the WebAssembly module, the thread
  for (let round = 0; round < Number(args.runs); round++) {
    for (const name of names) {
      const start = performance.now();
      await decoders[name]();
      times[name].push(performance.now() - start);
    }
  }
  await thread.close();
  console.log(`${args.runs} rounds, alternating:`);
  for (const name of names) {
    const ratio = name === 'jpeg' ? '' : `; ×jpeg: ${(median(times[name]) / median(times.jpeg)).toFixed(1)} by medians, ${(Math.min(...times[name]) / Math.min(...times.jpeg)).toFixed(1)} by fastest`;
    console.log(`  ${name}: median ${formatMs(median(times[name]))} ms (${formatMs(Math.min(...times[name]))}–${formatMs(Math.max(...times[name]))})${ratio}`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
