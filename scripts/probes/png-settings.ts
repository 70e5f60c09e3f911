/**
 * `npx tsx scripts/probes/png-settings.ts [PHOTO] [--cutout ANSWER.png …]`: what the PNG encoder's
 * settings cost. By default on a 12-megapixel cut-out made here (the source photo scaled to
 * 4000×3000, a mask made from its own luminance, invisible pixels black as the pipeline
 * writes them); with `--cutout`, on real answers too (the PNG of an `image_base64`, saved to
 * a file). Prints ms (median of 5) and MB for libvips' zlib (sharp, the encoder before) and
 * for @napi-rs/image's fdeflate (`fast`) and zlib (`small`) with each row filter.
 * The figures behind the settings in src/pipeline/encode.ts; see docs/internals/performance.md.
 */
import { parseArgs } from 'node:util';
import { CompressionType, FilterType, Transformer } from '@napi-rs/image';
import sharp from 'sharp';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { cutout: { type: 'string', multiple: true, default: [] } } });
const source = positionals[0] ?? '../shared/fixtures/photos/animal-1.jpg';

interface Rgba {
  label: string;
  data: Buffer;
  width: number;
  height: number;
}

async function syntheticCutout(): Promise<Rgba> {
  const [width, height] = [4000, 3000];
  const raw = (channels: 1 | 3) => ({ raw: { width, height, channels } });
  const rgb = await sharp(source).resize(width, height, { fit: 'fill' }).removeAlpha().raw().toBuffer();
  const alpha = await sharp(source).resize(width, height, { fit: 'fill' }).greyscale().blur(3).threshold(128).blur(1.5).extractChannel(0).raw().toBuffer();
  const visible = await sharp(alpha, raw(1)).threshold(1).toColourspace('b-w').raw().toBuffer();
  const data = await sharp(rgb, raw(3)).boolean(visible, 'and', raw(1)).joinChannel(alpha, raw(1)).raw().toBuffer();
  const invisible = (100 * alpha.filter((a) => a === 0).length) / alpha.length;
  return { label: `${source} at ${width}×${height}, ${invisible.toFixed(0)}% invisible`, data, width, height };
}

async function answer(path: string): Promise<Rgba> {
  const { data, info } = await sharp(path).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { label: `${path}, ${info.width}×${info.height}`, data, width: info.width, height: info.height };
}

async function time(encode: () => Promise<Buffer>): Promise<[number, number]> {
  const runs: number[] = [];
  let size = 0;
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    size = (await encode()).length;
    runs.push(performance.now() - start);
  }
  return [runs.sort((a, b) => a - b)[2], size / 1e6];
}

const filters = [
  ['none', FilterType.NoFilter],
  ['sub', FilterType.Sub],
  ['up', FilterType.Up],
  ['avg', FilterType.Avg],
  ['paeth', FilterType.Paeth],
] as const;

for (const image of [await syntheticCutout(), ...(await Promise.all(values.cutout.map(answer)))]) {
  const { data, width, height } = image;
  console.log(`\n${image.label}`);
  console.log('encoder                               filter          ms      MB');
  const row = (encoder: string, filter: string, [ms, mb]: [number, number]) =>
    console.log(`${encoder.padEnd(36)}  ${filter.padEnd(10)}  ${ms.toFixed(0).padStart(6)}  ${mb.toFixed(2).padStart(6)}`);
  for (const [level, adaptive] of [[1, false], [2, false], [6, false], [1, true]] as const) {
    const encoded = await time(() => sharp(data, { raw: { width, height, channels: 4 } }).png({ compressionLevel: level, adaptiveFiltering: adaptive }).toBuffer());
    row(`sharp (libvips zlib ${level})`, adaptive ? 'adaptive' : 'none', encoded);
  }
  for (const [name, compressionType] of [['fast (fdeflate)', CompressionType.Fast], ['small (zlib default)', CompressionType.Default]] as const) {
    for (const [filter, filterType] of filters) {
      if (compressionType === CompressionType.Default && filterType !== FilterType.Up) continue;
      row(`@napi-rs/image ${name}`, filter, await time(() => Transformer.fromRgbaPixels(data, width, height).png({ compressionType, filterType })));
    }
  }
}
