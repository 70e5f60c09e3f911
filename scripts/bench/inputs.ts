import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { QUALITIES, type Quality } from '../../src/pipeline/views.js';

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
  /**
   * The same with `"quality"` set, one per quality (`views.ts`); the server's default quality's
   * is `jsonBody` itself, no field, as a client that does not choose sends it.
   */
  qualityJsonBodies: Record<Quality, Buffer>;
}

/** The base64 endpoint's JSON body: `fields` (plain JSON values) and the image's Base64. */
function jsonBodyOf(base64: Buffer, fields: Record<string, string | boolean> = {}): Buffer {
  const head = JSON.stringify({ ...fields, image_base64: '' }).slice(0, -2);
  return Buffer.concat([Buffer.from(head), base64, Buffer.from('"}')]);
}

/**
 * Scales a real photo to about `megapixels` (keeping its aspect ratio, Lanczos) and encodes
 * it as a quality-90 JPEG, like a camera or phone picture of that size.
 *
 * @example const [small] = await makeBenchImages('photo.jpg', [0.7], '/tmp/bench', 'auto')
 */
export async function makeBenchImages(sourcePath: string, sizes: readonly number[], dir: string, serverDefault?: Quality): Promise<BenchImage[]> {
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
    const jsonBody = jsonBodyOf(base64);
    const qualityJsonBodies = Object.fromEntries(QUALITIES.map((quality) => [quality, quality === serverDefault ? jsonBody : jsonBodyOf(base64, { quality })])) as Record<Quality, Buffer>;
    images.push({
      label: `${megapixels} MP`,
      megapixels: (width * height) / 1e6,
      width,
      height,
      bytes,
      mime: 'image/jpeg',
      path,
      jsonBody,
      unrefinedJsonBody: jsonBodyOf(base64, { refine: false }),
      qualityJsonBodies,
    });
  }
  return images;
}
