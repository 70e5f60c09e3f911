import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';

/**
 * `source` scaled to `width × height` as a JPEG (quality 90), and as an HEIC of the same
 * pixels when asked (Debian's heif-enc, from libheif-examples, at quality 50: a phone's
 * setting, and a file a hostile client could send many of). Made once and kept in
 * `<root>/data/heic-memory/` for the memory scripts, the soak and the probes.
 */
export async function scaledPhoto(root: string, source: string, width: number, height: number, format: 'jpeg' | 'heic'): Promise<Buffer> {
  const dir = join(root, 'data/heic-memory');
  await mkdir(dir, { recursive: true });
  const stem = join(dir, `${width}x${height}`);
  if (!existsSync(`${stem}.jpg`)) await sharp(source).autoOrient().resize(width, height, { fit: 'fill' }).jpeg({ quality: 90 }).toFile(`${stem}.jpg`);
  if (format === 'jpeg') return readFile(`${stem}.jpg`);
  if (!existsSync(`${stem}.heic`)) await promisify(execFile)('heif-enc', ['-q', '50', '-o', `${stem}.heic`, `${stem}.jpg`]);
  return readFile(`${stem}.heic`);
}
