/**
 * `npx tsx scripts/png-settings.ts [PHOTO]`: what the PNG encoder's settings cost on a
 * 12-megapixel cut-out (the source photo scaled to 4000×3000, a mask made from its own
 * luminance), with and without black in the invisible pixels. Prints ms (median of 3) and MB.
 * The figures behind the settings in src/pipeline/encode.ts; see docs/benchmarks.md.
 */
import sharp from 'sharp';

const source = process.argv[2] ?? '../shared/fixtures/photos/animal-1.jpg';
const W = 4000;
const H = 3000;
const rgb = await sharp(source).resize(W, H, { fit: 'fill' }).removeAlpha().raw().toBuffer();
const alpha = await sharp(source).resize(W, H, { fit: 'fill' }).greyscale().blur(3).threshold(128).blur(1.5).extractChannel(0).raw().toBuffer();
const visible = await sharp(alpha, { raw: { width: W, height: H, channels: 1 } }).threshold(1).toColourspace('b-w').raw().toBuffer();
const raw = (channels: 1 | 3) => ({ raw: { width: W, height: H, channels } });

async function time(encode: () => Promise<Buffer>): Promise<[number, number]> {
  const runs: number[] = [];
  let size = 0;
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    size = (await encode()).length;
    runs.push(performance.now() - start);
  }
  return [runs.sort((a, b) => a - b)[1], size / 1e6];
}

console.log(`${source} at ${W}×${H}, ${((100 * alpha.filter((a) => a === 0).length) / alpha.length).toFixed(0)}% invisible`);
console.log('invisible colour  zlib level  adaptive filter      ms     MB');
for (const black of [false, true]) {
  for (const [level, adaptive] of [[1, false], [2, false], [3, false], [6, false], [2, true]] as const) {
    const [ms, mb] = await time(() => {
      const colour = sharp(rgb, raw(3));
      if (black) colour.boolean(visible, 'and', raw(1));
      return colour.joinChannel(alpha, raw(1)).png({ compressionLevel: level, adaptiveFiltering: adaptive }).toBuffer();
    });
    console.log(`${(black ? 'black' : 'kept').padEnd(16)}  ${String(level).padEnd(10)}  ${String(adaptive).padEnd(15)}  ${ms.toFixed(0).padStart(6)}  ${mb.toFixed(1).padStart(5)}`);
  }
}
