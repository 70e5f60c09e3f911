import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';

/** One test photo at a given size, as the JPEG a client would send. */
export interface BenchImage {
  /** `2.5 MP`-style label, from the requested size. */
  label: string;
  megapixels: number;
  width: number;
  height: number;
  /** The JPEG bytes. */
  bytes: Buffer;
  mime: 'image/jpeg';
  /** Where the JPEG was written (the peer's worker reads it from there). */
  path: string;
  /** The base64 endpoint's request body, built once so the load generator only sends it. */
  jsonBody: Buffer;
  /** The same with `"refine": false`: the model's mask stretched, to price the refine stage. */
  unrefinedJsonBody: Buffer;
}

/**
 * Scales a real photo to about `megapixels` (keeping its aspect ratio, Lanczos) and encodes
 * it as a quality-90 JPEG, like a camera or phone picture of that size.
 *
 * @example const [small] = await makeBenchImages('photo.jpg', [0.7], '/tmp/bench')
 */
export async function makeBenchImages(sourcePath: string, sizes: readonly number[], dir: string): Promise<BenchImage[]> {
  const source = sharp(sourcePath).autoOrient();
  const { width: sw, height: sh } = await source.clone().toBuffer({ resolveWithObject: true }).then(({ info }) => info);
  const images: BenchImage[] = [];
  for (const megapixels of sizes) {
    const width = Math.round(Math.sqrt((megapixels * 1e6 * sw) / sh));
    const height = Math.round((width * sh) / sw);
    const bytes = await source.clone().resize(width, height, { fit: 'fill', kernel: 'lanczos3' }).jpeg({ quality: 90 }).toBuffer();
    const path = join(dir, `photo-${megapixels}mp.jpg`);
    await writeFile(path, bytes);
    const base64 = Buffer.from(bytes.toString('base64'));
    const jsonBody = Buffer.concat([Buffer.from('{"image_base64":"'), base64, Buffer.from('"}')]);
    const unrefinedJsonBody = Buffer.concat([Buffer.from('{"refine":false,"image_base64":"'), base64, Buffer.from('"}')]);
    images.push({ label: `${megapixels} MP`, megapixels: (width * height) / 1e6, width, height, bytes, mime: 'image/jpeg', path, jsonBody, unrefinedJsonBody });
  }
  return images;
}
