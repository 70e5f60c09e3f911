import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { multipartBody } from '../lib/multipart-body.js';

/** One kind of request the load test sends, built once and sent many times. */
export interface LoadCase {
  name: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Sent with this Authorization instead of a managed token. */
  token?: string;
  /** For valid cases: the size the answer's PNG must have. */
  expect?: { width: number; height: number };
}

const JSON_HEADERS: Record<string, string> = { 'content-type': 'application/json' };
const base64Case = (name: string, bytes: Buffer): LoadCase => ({
  name,
  path: '/api/v1/background/remove/base64',
  headers: JSON_HEADERS,
  body: Buffer.from(JSON.stringify({ image_base64: bytes.toString('base64') })),
});

function multipart(field: string, filename: string, bytes: Buffer): { headers: Record<string, string>; body: Buffer } {
  const { body, contentType } = multipartBody([{ name: field, filename, contentType: 'application/octet-stream', data: bytes }]);
  return { headers: { 'content-type': contentType }, body };
}

/**
 * Valid removals: real photos from `photosDir` when given (at most four, scaled to 0.5–2
 * megapixels), else generated pictures; sent as Base64 and as multipart uploads.
 */
export async function validCases(photosDir?: string): Promise<LoadCase[]> {
  const sources: Buffer[] = [];
  if (photosDir) {
    const names = (await readdir(photosDir)).filter((n) => /\.jpe?g$/i.test(n)).sort().slice(0, 4);
    for (const name of names) sources.push(await readFile(join(photosDir, name)));
  }
  while (sources.length < 4) {
    sources.push(await sharp({ create: { width: 800, height: 600, channels: 3, background: { r: 40 * sources.length, g: 120, b: 200 } } }).jpeg().toBuffer());
  }
  const cases: LoadCase[] = [];
  for (const [i, source] of sources.entries()) {
    const megapixels = [0.5, 1, 1.5, 2][i];
    const meta = await sharp(source).autoOrient().metadata();
    const width = Math.round(Math.sqrt((megapixels * 1e6 * meta.width) / meta.height));
    const height = Math.round((width * meta.height) / meta.width);
    const bytes = await sharp(source).autoOrient().resize(width, height, { fit: 'fill' }).jpeg({ quality: 88 }).toBuffer();
    const expect = { width, height };
    cases.push({ ...base64Case(`valid base64 ${megapixels} MP`, bytes), expect });
    cases.push({ name: `valid multipart ${megapixels} MP`, path: '/api/v1/background/remove/multipart', ...multipart('file', 'photo.jpg', bytes), expect });
  }
  return cases;
}

/** Hostile and broken requests, each of which must get its 4xx, never a 5xx. */
export async function hostileCases(options: { userTokenId: string }): Promise<LoadCase[]> {
  const jpeg = await sharp({ create: { width: 320, height: 240, channels: 3, background: '#3a7' } }).jpeg().toBuffer();
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#888' } }).png().toBuffer();
  const bomb = Buffer.from(png);
  bomb.writeUInt32BE(100_000, 16);
  bomb.writeUInt32BE(100_000, 20);
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><image href="http://169.254.169.254/x.png"/></svg>');
  return [
    base64Case('truncated JPEG', jpeg.subarray(0, jpeg.length >> 1)),
    base64Case('PNG header claiming 100000×100000', bomb),
    base64Case('SVG with an external reference', svg),
    base64Case('text', Buffer.from('hello, not an image')),
    base64Case('zero bytes', Buffer.alloc(0)),
    { name: 'invalid Base64', path: '/api/v1/background/remove/base64', headers: JSON_HEADERS, body: Buffer.from('{"image_base64":"ab$%cd"}') },
    { name: 'malformed JSON', path: '/api/v1/background/remove/base64', headers: JSON_HEADERS, body: Buffer.from('{"image_base64": "abc') },
    { name: 'missing field', path: '/api/v1/background/remove/base64', headers: JSON_HEADERS, body: Buffer.from('{"image":"abc"}') },
    { name: 'wrong type', path: '/api/v1/background/remove/base64', headers: JSON_HEADERS, body: Buffer.from('{"image_base64":[1,2,3]}') },
    { name: 'URL to a private address', path: '/api/v1/background/remove/url', headers: JSON_HEADERS, body: Buffer.from('{"image_url":"http://127.0.0.1:22/"}') },
    { name: 'URL with a file scheme', path: '/api/v1/background/remove/url', headers: JSON_HEADERS, body: Buffer.from('{"image_url":"file:///etc/passwd"}') },
    { name: 'multipart, wrong field name', path: '/api/v1/background/remove/multipart', ...multipart('image', 'a.jpg', jpeg) },
    { ...base64Case('a user token as Authorization', jpeg), token: options.userTokenId },
    { ...base64Case('a forged managed token', jpeg), token: `cut_mgd_${'A'.repeat(43)}` },
    { ...base64Case('no token', jpeg), token: '' },
  ];
}
