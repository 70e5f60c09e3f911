import sharp, { type Sharp } from 'sharp';
import { multipartBody } from '../../scripts/lib/multipart-body.js';

/**
 * A synthetic photo the model segments reliably: a shaded orange ball with a darker rim
 * on a pale, softly graded backdrop. The ball is centred and fills about a third of the
 * picture's width, so its centre is foreground and the corners are background.
 */
export async function makeSubjectPhoto(width = 640, height = 480): Promise<Sharp> {
  const r = Math.round(Math.min(width, height) * 0.3);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <defs>
      <linearGradient id="bg" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#eef1f4"/><stop offset="1" stop-color="#cfd6dd"/></linearGradient>
      <radialGradient id="ball" cx="0.38" cy="0.35" r="0.75"><stop offset="0" stop-color="#ffd08a"/><stop offset="0.6" stop-color="#f07a12"/><stop offset="1" stop-color="#8a3a05"/></radialGradient>
    </defs>
    <rect width="100%" height="100%" fill="url(#bg)"/>
    <ellipse cx="${width / 2}" cy="${height / 2 + r * 0.95}" rx="${r * 0.9}" ry="${r * 0.15}" fill="#9aa3ab" opacity="0.5"/>
    <circle cx="${width / 2}" cy="${height / 2}" r="${r}" fill="url(#ball)"/>
  </svg>`;
  return sharp(Buffer.from(svg));
}

/**
 * A photo with no clear subject: forty overlapping discs of random colours (a fixed seed) on
 * grey. The model's guess on it changes when it is shown the photo mirrored, so the views of
 * `quality: best` disagree (its X-Uncertainty measured about 0.5, the ball's about 0.002).
 */
export function makeClutterPhoto(width = 640, height = 480): Promise<Buffer> {
  let seed = 3;
  const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  let discs = '';
  for (let i = 0; i < 40; i++) {
    const [x, y, r] = [random() * width, random() * height, 10 + random() * 60].map((v) => Math.floor(v));
    const [red, green, blue] = [random(), random(), random()].map((v) => Math.floor(v * 255));
    discs += `<circle cx="${x}" cy="${y}" r="${r}" fill="rgb(${red},${green},${blue})"/>`;
  }
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="#808080"/>${discs}</svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

/** The subject photo encoded as one of the formats Cutout accepts. */
export async function makePhoto(format: 'jpeg' | 'png' | 'webp' | 'gif' | 'tiff' | 'avif', width = 640, height = 480): Promise<Buffer> {
  const photo = await makeSubjectPhoto(width, height);
  return photo.toFormat(format).toBuffer();
}

/** Alpha (0–255) of a decoded RGBA PNG at a point given as fractions of width and height. */
export async function alphaAt(png: Buffer, fx: number, fy: number): Promise<number> {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  if (info.channels !== 4) throw new Error(`expected RGBA, got ${info.channels} channels`);
  const x = Math.min(info.width - 1, Math.round(fx * info.width));
  const y = Math.min(info.height - 1, Math.round(fy * info.height));
  return data[(y * info.width + x) * 4 + 3];
}

/** A multipart/form-data body with one file part, as `app.inject` takes it. */
export function multipartUpload(bytes: Uint8Array, filename = 'photo.jpg', field = 'file'): { contentType: string; payload: Buffer } {
  const { body, contentType } = multipartBody([{ name: field, filename, contentType: 'application/octet-stream', data: bytes }]);
  return { contentType, payload: body };
}
