import sharp, { type Metadata } from 'sharp';
import type { ErrorCode } from '../src/errors.js';
import { makeSubjectPhoto } from './helpers/images.js';
import { multipartBody, type FormPart } from '../scripts/lib/multipart-body.js';

/**
 * The bad-input corpus: every kind of malformed, hostile or merely unusual input a client can
 * send, each with the exact answer Cutout must give. Everything is generated here with sharp
 * and Buffers (nothing is downloaded); `test/bad-input.test.ts` sends each case to one app.
 *
 * Inputs that must succeed are 64×48 so that each costs one model run and little else.
 */

/** The three background endpoints, by the last segment of their path. */
export type Endpoint = 'base64' | 'url' | 'multipart';

/** What one case sends: the body and its headers (the test adds the managed token). */
export interface CorpusRequest {
  payload: string | Buffer;
  headers: Record<string, string>;
}

/** What a case needs from the app it runs against. */
export interface CorpusContext {
  /** The app's CUTOUT_MAX_IMAGE_BYTES. */
  maxImageBytes: number;
  /** The app's JSON body limit (Fastify's bodyLimit). */
  bodyLimit: number;
  /** Serves `bytes` from a local HTTP server and returns its URL (for the url endpoint). */
  serve(bytes: Buffer): string;
  /** A URL on the same local server that counts requests: nothing may ever fetch it. */
  canaryUrl: string;
}

export interface CorpusExpectation {
  status: number;
  /** The problem's `code`; absent for 200. */
  code?: ErrorCode;
  /** For 200: the width and height the returned PNG must have. */
  size?: { width: number; height: number };
  /** For refusals: what the problem's `detail` must say (which check refused it). */
  detail?: RegExp;
  /**
   * The input is built to be expensive if handled carelessly (a decompression bomb, thousands
   * of frames): a refusal must come within a second and grow the process by under 300 MB; a
   * success must be decoded (to the model's size) within a second.
   */
  cheap?: boolean;
}

export interface CorpusCase {
  name: string;
  endpoint: Endpoint;
  build(context: CorpusContext): Promise<CorpusRequest> | CorpusRequest;
  expect: CorpusExpectation;
  /**
   * `expect` is the right answer but Cutout gives another one today: the test pins `answers`
   * (so it turns red when the bug is fixed, or changes) instead of `expect`.
   */
  knownBug?: { answers: { status: number; code: ErrorCode }; why: string };
}

// ---------------------------------------------------------------------------------------------
// Building blocks

const SMALL = { width: 64, height: 48 };

/** The test suite's synthetic photo at 64×48, opaque RGB (no alpha channel), as a sharp pipeline to encode. */
const smallPhoto = async () => (await makeSubjectPhoto(SMALL.width, SMALL.height)).removeAlpha();

async function smallPng(): Promise<Buffer> {
  return (await smallPhoto()).png().toBuffer();
}

async function smallJpeg(): Promise<Buffer> {
  return (await smallPhoto()).jpeg().toBuffer();
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** CRC-32 as PNG chunks and ZIP entries use it. */
export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * A real PNG whose IHDR claims `width × height`, with the IHDR CRC recomputed so the decoder
 * sees a well-formed header and has only the dimensions to refuse.
 */
export async function pngClaiming(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(await smallPng());
  if (png.toString('latin1', 12, 16) !== 'IHDR') throw new Error('the PNG does not start with IHDR');
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(crc32(png.subarray(12, 29)), 29); // over chunk type and the 13 data bytes
  return png;
}

/** A real baseline JPEG whose SOF0 marker claims `width × height` (each at most 65535). */
export async function jpegClaiming(width: number, height: number): Promise<Buffer> {
  const jpeg = Buffer.from(await smallJpeg());
  for (let at = 2; at + 4 < jpeg.length; ) {
    if (jpeg[at] !== 0xff) throw new Error(`no JPEG marker at byte ${at}`);
    const marker = jpeg[at + 1];
    if (marker === 0xc0) {
      // FF C0, length (2), precision (1), height (2), width (2)
      jpeg.writeUInt16BE(height, at + 5);
      jpeg.writeUInt16BE(width, at + 7);
      return jpeg;
    }
    at += 2 + jpeg.readUInt16BE(at + 2);
  }
  throw new Error('the JPEG has no SOF0 marker');
}

/** An animated GIF of `frames` distinct 8×8 frames (each frame's index drawn as black and white pixels). */
async function gifOfFrames(frames: number): Promise<Buffer> {
  const frame = 8 * 8 * 3;
  const raw = Buffer.alloc(frame * frames, 128);
  for (let f = 0; f < frames; f++) {
    for (let bit = 0; bit < 12; bit++) raw.fill((f >> bit) & 1 ? 255 : 0, f * frame + bit * 3, f * frame + bit * 3 + 3);
  }
  const gif = await sharp(raw, { raw: { width: 8, height: 8 * frames, channels: 3, pageHeight: 8 } }).gif().toBuffer();
  const { pages } = await sharp(gif).metadata();
  if (pages !== frames) throw new Error(`the GIF has ${pages} frames, not ${frames}`);
  return gif;
}

/** Checks a generated input really is what its case says, so no case passes vacuously. */
async function checked(bytes: Buffer, what: string, test: (meta: Metadata) => boolean): Promise<Buffer> {
  const meta = await sharp(bytes).metadata();
  if (!test(meta)) throw new Error(`the generated input is not ${what}: ${JSON.stringify({ ...meta, exif: undefined, icc: undefined, xmp: undefined })}`);
  return bytes;
}

/** A ZIP archive with one stored (uncompressed) entry. */
function zipOf(name: string, data: Buffer): Buffer {
  const file = Buffer.from(name);
  const crc = crc32(data);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4); // version needed
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(file.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(file.length, 28);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(46 + file.length, 12);
  end.writeUInt32LE(30 + file.length + data.length, 16);
  return Buffer.concat([local, file, data, central, file, end]);
}

/** A minimal one-page PDF (a filled rectangle), as a PDF writer would produce it. */
function minimalPdf(): Buffer {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 64 48] /Contents 4 0 R >>',
    '<< /Length 26 >>\nstream\n1 0.5 0 rg 8 8 48 32 re f\nendstream',
  ];
  let pdf = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(pdf, 'latin1'));
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(pdf, 'latin1');
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

const svgPlain = () =>
  Buffer.from('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="64" height="48"><circle cx="32" cy="24" r="12" fill="#e07020"/></svg>');

/** SVG that would fetch `url` three ways (an <image>, a CSS import, an external XML entity) if anything rendered it. */
const svgReferencing = (url: string) =>
  Buffer.from(`<?xml version="1.0"?>
<!DOCTYPE svg [<!ENTITY ext SYSTEM "${url}/entity">]>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="64" height="48">
  <style>@import url("${url}/style.css");</style>
  <image href="${url}/image.png" xlink:href="${url}/image.png" width="64" height="48"/>
  <text>&ext;</text>
</svg>`);

const HTML = Buffer.from('<!DOCTYPE html>\n<html><head><title>photo</title></head><body><img src="photo.jpg"></body></html>\n');
const TEXT = Buffer.from('This is a photo of a cat, honestly. Please remove its background.\n');

/** A JSON body, serialised exactly as given. */
const json = (body: unknown): CorpusRequest => ({ payload: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
const asBase64 = (bytes: Buffer): CorpusRequest => json({ image_base64: bytes.toString('base64') });

/** A multipart/form-data body as `app.inject` takes it; a fixed boundary, so that a failing case reads the same each run. */
export function multipartForm(parts: FormPart[], boundary = 'cutout-corpus-7d1f0e'): CorpusRequest {
  const { body, contentType } = multipartBody(parts, boundary);
  return { payload: body, headers: { 'content-type': contentType } };
}

const upload = (data: Buffer | string, filename = 'photo.jpg', contentType = 'image/jpeg'): CorpusRequest =>
  multipartForm([{ name: 'file', filename, contentType, data }]);

/** Standard Base64 of the small photo, encoded so that it ends in `=` padding (so leaving it out changes something). */
async function paddedBase64(): Promise<string> {
  for (const compressionLevel of [6, 9, 3, 0]) {
    const bytes = await (await smallPhoto()).png({ compressionLevel }).toBuffer();
    if (bytes.length % 3 !== 0) return bytes.toString('base64');
  }
  throw new Error('no candidate encoding has a length that needs padding');
}

/** Standard Base64 of the small PNG, checked to use `+` or `/` (so the URL-safe form differs). */
async function base64WithPlusOrSlash(): Promise<string> {
  const text = (await smallPng()).toString('base64');
  if (!/[+/]/.test(text)) throw new Error('the photo encodes without + or /; pick another one');
  return text;
}

const ok = (size = SMALL): CorpusExpectation => ({ status: 200, size });
const refused = (status: number, code: ErrorCode, extra: Partial<CorpusExpectation> = {}): CorpusExpectation => ({ status, code, ...extra });

// ---------------------------------------------------------------------------------------------
// The corpus

export const corpus: CorpusCase[] = [
  // Empty and truncated images
  { name: 'zero bytes (Base64 "")', endpoint: 'base64', build: () => json({ image_base64: '' }), expect: refused(400, 'invalid_request') },
  { name: 'zero bytes (Base64 of whitespace only)', endpoint: 'base64', build: () => json({ image_base64: ' \r\n\t ' }), expect: refused(400, 'invalid_request') },
  { name: 'zero bytes (empty multipart file)', endpoint: 'multipart', build: () => upload(Buffer.alloc(0)), expect: refused(400, 'invalid_request') },
  { name: 'zero bytes (URL answering an empty 200)', endpoint: 'url', build: (c) => json({ image_url: c.serve(Buffer.alloc(0)) }), expect: refused(400, 'invalid_request') },
  {
    name: 'JPEG truncated to half',
    endpoint: 'base64',
    build: async () => {
      const jpeg = await smallJpeg();
      return asBase64(jpeg.subarray(0, jpeg.length >> 1));
    },
    expect: refused(422, 'image_decode_failed'),
  },
  {
    name: 'JPEG missing its last 64 bytes (end of scan and EOI)',
    endpoint: 'multipart',
    build: async () => {
      const jpeg = await smallJpeg();
      return upload(jpeg.subarray(0, jpeg.length - 64));
    },
    expect: refused(422, 'image_decode_failed'),
  },
  {
    name: 'PNG truncated to half',
    endpoint: 'base64',
    build: async () => {
      const png = await smallPng();
      return asBase64(png.subarray(0, png.length >> 1));
    },
    expect: refused(422, 'image_decode_failed'),
  },
  { name: 'PNG of signature and IHDR only', endpoint: 'base64', build: async () => asBase64((await smallPng()).subarray(0, 33)), expect: refused(422, 'image_decode_failed') },
  { name: 'PNG truncated (via URL)', endpoint: 'url', build: async (c) => json({ image_url: c.serve((await smallPng()).subarray(0, 200)) }), expect: refused(422, 'image_decode_failed') },

  // Decompression bombs: a real small image whose header claims a huge one. 100000×100000 is
  // also over sharp's own default limit (268 megapixels); 1×60000000 and 10000×10000 are not,
  // so those two are refused only if Cutout's CUTOUT_MAX_PIXELS (50 megapixels) is applied.
  { name: 'PNG header claiming 100000×100000', endpoint: 'base64', build: async () => asBase64(await pngClaiming(100_000, 100_000)), expect: refused(422, 'too_many_pixels', { cheap: true }) },
  { name: 'PNG header claiming 100000×100000 (multipart)', endpoint: 'multipart', build: async () => upload(await pngClaiming(100_000, 100_000), 'bomb.png', 'image/png'), expect: refused(422, 'too_many_pixels', { cheap: true }) },
  { name: 'PNG header claiming 100000×100000 (via URL)', endpoint: 'url', build: async (c) => json({ image_url: c.serve(await pngClaiming(100_000, 100_000)) }), expect: refused(422, 'too_many_pixels', { cheap: true }) },
  { name: 'PNG header claiming 1×60000000 (a long thin bomb)', endpoint: 'base64', build: async () => asBase64(await pngClaiming(1, 60_000_000)), expect: refused(422, 'too_many_pixels', { cheap: true }) },
  {
    name: 'PNG header claiming 7000×7000 (under the pixel limit) over 64×48 of data',
    endpoint: 'base64',
    build: async () => asBase64(await pngClaiming(7000, 7000)),
    expect: refused(422, 'image_decode_failed', { cheap: true }),
  },
  // JPEG stores each side in 16 bits, so 100000 cannot be written; 65500 is libjpeg's own maximum.
  { name: 'JPEG SOF0 claiming 65500×65500', endpoint: 'base64', build: async () => asBase64(await jpegClaiming(65_500, 65_500)), expect: refused(422, 'too_many_pixels', { cheap: true }) },
  { name: 'JPEG SOF0 claiming 10000×10000', endpoint: 'multipart', build: async () => upload(await jpegClaiming(10_000, 10_000)), expect: refused(422, 'too_many_pixels', { cheap: true }) },
  {
    name: 'JPEG SOF0 claiming 65535×65535',
    endpoint: 'base64',
    build: async () => asBase64(await jpegClaiming(65_535, 65_535)),
    expect: refused(422, 'too_many_pixels', { cheap: true }),
  },

  // Animation
  { name: 'GIF of 3000 frames (first frame only)', endpoint: 'base64', build: async () => asBase64(await gifOfFrames(3000)), expect: { ...ok({ width: 8, height: 8 }), cheap: true } },

  // Unusual but valid pixel formats: all must succeed
  {
    name: '16-bit RGB PNG',
    endpoint: 'base64',
    build: async () => asBase64(await checked(await (await smallPhoto()).toColourspace('rgb16').png().toBuffer(), '16-bit', (m) => m.depth === 'ushort')),
    expect: ok(),
  },
  {
    name: 'CMYK JPEG',
    endpoint: 'multipart',
    build: async () => upload(await checked(await (await smallPhoto()).toColourspace('cmyk').jpeg().toBuffer(), 'CMYK', (m) => m.space === 'cmyk' && m.channels === 4)),
    expect: ok(),
  },
  {
    name: 'greyscale PNG',
    endpoint: 'base64',
    build: async () => asBase64(await checked(await (await smallPhoto()).toColourspace('b-w').png().toBuffer(), 'greyscale', (m) => m.channels === 1)),
    expect: ok(),
  },
  {
    name: 'palette PNG (16 colours)',
    endpoint: 'base64',
    build: async () => asBase64(await checked(await (await smallPhoto()).png({ palette: true, colours: 16 }).toBuffer(), 'a palette PNG', (m) => m.isPalette === true)),
    expect: ok(),
  },
  {
    name: 'already transparent PNG (transparent corners, half-transparent middle)',
    endpoint: 'multipart',
    build: async () => {
      const mask = Buffer.from(
        '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="48"><ellipse cx="32" cy="24" rx="30" ry="22" fill="#fff" fill-opacity="0.5"/><circle cx="32" cy="24" r="14" fill="#fff"/></svg>',
      );
      const alphaChannel = await sharp(mask).extractChannel(3).toBuffer();
      const rgba = await sharp(await (await smallPhoto()).png().toBuffer()).joinChannel(alphaChannel).png().toBuffer();
      const alpha = await checked(rgba, 'transparent', (m) => m.hasAlpha === true);
      const { channels } = await sharp(alpha).stats();
      if (channels[3].min !== 0) throw new Error('the generated PNG has no fully transparent pixel');
      return upload(alpha, 'cut.png', 'image/png');
    },
    expect: ok(),
  },

  // Not an accepted format
  { name: 'SVG', endpoint: 'base64', build: () => asBase64(svgPlain()), expect: refused(415, 'unsupported_image_format', { detail: /SVG/ }) },
  { name: 'SVG with external references (image, CSS import, XML entity)', endpoint: 'base64', build: (c) => asBase64(svgReferencing(c.canaryUrl)), expect: refused(415, 'unsupported_image_format') },
  {
    name: 'SVG with external references, uploaded as photo.png image/png',
    endpoint: 'multipart',
    build: (c) => upload(svgReferencing(c.canaryUrl), 'photo.png', 'image/png'),
    expect: refused(415, 'unsupported_image_format'),
  },
  { name: 'SVG with external references (via URL)', endpoint: 'url', build: (c) => json({ image_url: c.serve(svgReferencing(c.canaryUrl)) }), expect: refused(415, 'unsupported_image_format') },
  { name: 'PDF', endpoint: 'base64', build: () => asBase64(minimalPdf()), expect: refused(415, 'unsupported_image_format', { detail: /PDF/ }) },
  { name: 'PDF uploaded as photo.jpg image/jpeg', endpoint: 'multipart', build: () => upload(minimalPdf()), expect: refused(415, 'unsupported_image_format') },
  { name: 'plain text', endpoint: 'base64', build: () => asBase64(TEXT), expect: refused(415, 'unsupported_image_format') },
  { name: 'HTML', endpoint: 'multipart', build: () => upload(HTML, 'photo.jpg', 'image/jpeg'), expect: refused(415, 'unsupported_image_format') },
  { name: 'HTML (via URL)', endpoint: 'url', build: (c) => json({ image_url: c.serve(HTML) }), expect: refused(415, 'unsupported_image_format') },
  { name: 'ZIP holding a PNG', endpoint: 'base64', build: async () => asBase64(zipOf('photo.png', await smallPng())), expect: refused(415, 'unsupported_image_format') },
  { name: 'fewer bytes than any image signature (11 bytes of a PNG)', endpoint: 'base64', build: async () => asBase64((await smallPng()).subarray(0, 11)), expect: refused(415, 'unsupported_image_format') },

  // Base64 variants that are accepted
  {
    name: 'Base64 wrapped at 76 columns with CRLF, plus spaces and tabs',
    endpoint: 'base64',
    build: async () => {
      const text = (await smallPng()).toString('base64');
      const wrapped = `  ${text.replace(/.{76}/g, '$&\r\n')}\t \n`.replace(/(.{10})(.{10})/, '$1 \t$2');
      return json({ image_base64: wrapped });
    },
    expect: ok(),
  },
  { name: 'Base64 in the URL-safe alphabet (- and _)', endpoint: 'base64', build: async () => json({ image_base64: (await base64WithPlusOrSlash()).replace(/\+/g, '-').replace(/\//g, '_') }), expect: ok() },
  {
    name: 'Base64 without its = padding',
    endpoint: 'base64',
    build: async () => {
      const text = await paddedBase64();
      if (!text.endsWith('=')) throw new Error('the chosen photo needs no padding');
      return json({ image_base64: text.replace(/=+$/, '') });
    },
    expect: ok(),
  },
  { name: 'Base64 with a data:image/png;base64, prefix', endpoint: 'base64', build: async () => json({ image_base64: `data:image/png;base64,${(await smallPng()).toString('base64')}` }), expect: ok() },

  // Base64 that is not
  {
    name: 'Base64 with a $ inside',
    endpoint: 'base64',
    build: async () => {
      const text = (await smallPng()).toString('base64');
      return json({ image_base64: `${text.slice(0, 40)}$${text.slice(40)}` });
    },
    expect: refused(400, 'invalid_base64', { detail: /position 40/ }),
  },
  { name: 'Base64 with URL-encoded padding (%3D)', endpoint: 'base64', build: async () => json({ image_base64: (await paddedBase64()).replace(/=/g, '%3D') }), expect: refused(400, 'invalid_base64') },
  { name: 'Base64 with a non-ASCII letter (é)', endpoint: 'base64', build: () => json({ image_base64: 'iVBORw0KGgoé' }), expect: refused(400, 'invalid_base64') },
  { name: 'Base64 with a NUL character', endpoint: 'base64', build: () => json({ image_base64: 'iVBORw0K\u0000GgoA' }), expect: refused(400, 'invalid_base64') },
  { name: 'Base64 with = in the middle', endpoint: 'base64', build: () => json({ image_base64: 'iVBO=Rw0KGgo' }), expect: refused(400, 'invalid_base64') },
  { name: 'Base64 of impossible length (4n+1 characters)', endpoint: 'base64', build: () => json({ image_base64: 'iVBORw0KGgoAA' }), expect: refused(400, 'invalid_base64') },
  { name: 'Base64 with a data: prefix that is not ;base64', endpoint: 'base64', build: async () => json({ image_base64: `data:image/png,${(await smallPng()).toString('base64')}` }), expect: refused(400, 'invalid_base64') },
  {
    name: 'Base64 decoding to one byte over the image limit',
    endpoint: 'base64',
    // The JSON body is under the body limit, so it is the decoded size that is refused.
    build: (c) => json({ image_base64: Buffer.alloc(c.maxImageBytes + 1, 0xff).toString('base64') }),
    expect: refused(413, 'payload_too_large', { detail: /decoded image/ }),
  },

  // JSON of the wrong shape
  { name: 'JSON: image_base64 is a number', endpoint: 'base64', build: () => json({ image_base64: 12345678 }), expect: refused(400, 'invalid_request') },
  { name: 'JSON: image_base64 is null', endpoint: 'base64', build: () => json({ image_base64: null }), expect: refused(400, 'invalid_request') },
  { name: 'JSON: image_base64 is an array of strings', endpoint: 'base64', build: async () => json({ image_base64: [(await smallPng()).toString('base64')] }), expect: refused(400, 'invalid_request') },
  { name: 'JSON: image_base64 is an object', endpoint: 'base64', build: () => json({ image_base64: { data: 'iVBORw0KGgo=' } }), expect: refused(400, 'invalid_request') },
  { name: 'JSON: image_base64 is true', endpoint: 'base64', build: () => json({ image_base64: true }), expect: refused(400, 'invalid_request') },
  { name: 'JSON: the body is an array', endpoint: 'base64', build: () => json([{ image_base64: 'iVBORw0KGgo=' }]), expect: refused(400, 'invalid_request') },
  { name: 'JSON: the body is a string', endpoint: 'base64', build: () => json('"iVBORw0KGgo="'), expect: refused(400, 'invalid_request') },
  { name: 'JSON: the body is null', endpoint: 'base64', build: () => json('null'), expect: refused(400, 'invalid_request') },
  { name: 'JSON: empty body', endpoint: 'base64', build: () => json(''), expect: refused(400, 'invalid_request') },
  { name: 'JSON: the field is misspelt (imageBase64)', endpoint: 'base64', build: async () => json({ imageBase64: (await smallPng()).toString('base64') }), expect: refused(400, 'invalid_request') },
  { name: 'JSON: image_url is a number', endpoint: 'url', build: () => json({ image_url: 42 }), expect: refused(400, 'invalid_request') },
  { name: 'JSON: image_url is an array of URLs', endpoint: 'url', build: (c) => json({ image_url: [c.canaryUrl] }), expect: refused(400, 'invalid_request') },
  { name: 'JSON: image_url is empty', endpoint: 'url', build: () => json({ image_url: '' }), expect: refused(400, 'invalid_request') },
  {
    name: 'JSON: image_base64 is an array nested 100000 deep',
    endpoint: 'base64',
    build: () => json(`{"image_base64":${'['.repeat(100_000)}${']'.repeat(100_000)}}`),
    expect: refused(400, 'invalid_request'),
  },
  {
    name: 'JSON: image_url is an object nested 100000 deep',
    endpoint: 'url',
    build: () => json(`{"image_url":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`),
    expect: refused(400, 'invalid_request'),
  },
  {
    name: 'JSON: extra fields (a string, a 100000-deep array, a million-element array) are ignored',
    endpoint: 'base64',
    build: async () =>
      json(
        `{"model":"isnet","image_base64":"${(await smallPng()).toString('base64')}",` +
          `"deep":${'['.repeat(100_000)}${']'.repeat(100_000)},"wide":[${new Array(1_000_000).fill(0).join(',')}]}`,
      ),
    expect: ok(),
  },
  { name: 'JSON: malformed (cut off)', endpoint: 'base64', build: () => json('{"image_base64": "iVBOR'), expect: refused(400, 'malformed_json') },
  // secure-json-parse refuses prototype poisoning; Fastify reports it as invalid JSON.
  { name: 'JSON: a __proto__ key', endpoint: 'base64', build: () => json('{"__proto__":{"polluted":true},"image_base64":"iVBORw0KGgo="}'), expect: refused(400, 'malformed_json') },
  {
    name: 'JSON body over the body limit',
    endpoint: 'base64',
    build: (c) => json({ image_base64: 'A'.repeat(c.bodyLimit) }),
    expect: refused(413, 'payload_too_large'),
  },
  { name: 'JSON body over the body limit (url endpoint)', endpoint: 'url', build: (c) => json({ image_url: `http://example.com/${'a'.repeat(c.bodyLimit)}` }), expect: refused(413, 'payload_too_large') },
  { name: 'a JSON endpoint sent text/plain', endpoint: 'base64', build: async () => ({ payload: (await smallPng()).toString('base64'), headers: { 'content-type': 'text/plain' } }), expect: refused(415, 'unsupported_media_type') },

  // Multipart forms
  { name: 'no file, only a text field', endpoint: 'multipart', build: () => multipartForm([{ name: 'note', data: 'no picture today' }]), expect: refused(400, 'invalid_request') },
  { name: 'no parts at all', endpoint: 'multipart', build: () => multipartForm([]), expect: refused(400, 'invalid_request') },
  {
    name: 'two files named file',
    endpoint: 'multipart',
    build: async () => {
      const jpeg = await smallJpeg();
      return multipartForm([
        { name: 'file', filename: 'a.jpg', contentType: 'image/jpeg', data: jpeg },
        { name: 'file', filename: 'b.jpg', contentType: 'image/jpeg', data: jpeg },
      ]);
    },
    expect: refused(400, 'invalid_request'),
  },
  {
    name: 'three files (over the parser\'s file limit)',
    endpoint: 'multipart',
    build: async () => {
      const jpeg = await smallJpeg();
      return multipartForm(['a', 'b', 'c'].map((n) => ({ name: 'file', filename: `${n}.jpg`, contentType: 'image/jpeg', data: jpeg })));
    },
    expect: refused(400, 'invalid_request'),
  },
  { name: 'the file part is named image', endpoint: 'multipart', build: async () => multipartForm([{ name: 'image', filename: 'photo.jpg', contentType: 'image/jpeg', data: await smallJpeg() }]), expect: refused(400, 'invalid_request') },
  { name: 'the file part is named File (case matters)', endpoint: 'multipart', build: async () => multipartForm([{ name: 'File', filename: 'photo.jpg', contentType: 'image/jpeg', data: await smallJpeg() }]), expect: refused(400, 'invalid_request') },
  { name: 'empty file', endpoint: 'multipart', build: () => upload(Buffer.alloc(0), 'empty.jpg'), expect: refused(400, 'invalid_request') },
  { name: 'file one byte over the image limit', endpoint: 'multipart', build: (c) => upload(Buffer.alloc(c.maxImageBytes + 1, 0xff)), expect: refused(413, 'payload_too_large') },
  // A part without a filename is the image unless it is plain text (no Content-Type counts as
  // text/plain): busboy's own rule took only application/octet-stream for a file.
  {
    name: 'part named file without filename, application/octet-stream (a file)',
    endpoint: 'multipart',
    build: async () => multipartForm([{ name: 'file', contentType: 'application/octet-stream', data: await smallJpeg() }]),
    expect: ok(),
  },
  {
    name: 'field named file holding text, no filename or type (not a file)',
    endpoint: 'multipart',
    build: () => multipartForm([{ name: 'file', data: 'photo.jpg' }]),
    expect: refused(400, 'invalid_request'),
  },
  {
    name: 'part named file without filename, image/png',
    endpoint: 'multipart',
    build: async () => multipartForm([{ name: 'file', contentType: 'image/png', data: await smallPng() }]),
    expect: ok(),
  },
  {
    name: 'Content-Type without a boundary',
    endpoint: 'multipart',
    build: () => ({ payload: 'anything', headers: { 'content-type': 'multipart/form-data' } }),
    expect: refused(400, 'invalid_request'),
  },
  {
    name: 'body cut off inside the file part',
    endpoint: 'multipart',
    build: async () => {
      const form = upload(await smallJpeg());
      return { ...form, payload: (form.payload as Buffer).subarray(0, 400) };
    },
    expect: refused(400, 'invalid_request'),
  },
  { name: 'a JSON body', endpoint: 'multipart', build: async () => asBase64(await smallJpeg()), expect: refused(415, 'unsupported_media_type') },

  // Output options with bad values: 400 before any work, the detail naming the field and what it takes.
  ...badOptions(),
];

/** Each output option with values it must refuse, sent as JSON (base64, url) and as a form field (multipart). */
function badOptions(): CorpusCase[] {
  const bad: [field: string, values: unknown[], detail: RegExp][] = [
    ['format', ['gif', 5, 'toString'], /format must be auto, png, jpg, jpeg, webp or zip/],
    ['channels', ['rgb', true], /channels must be/],
    ['bg_color', ['#12345', '#gggggg', 'blurple'], /bg_color must be a hex colour .* or a CSS colour name/],
    ['bg_image_url', [17], /bg_image_url must be an http\(s\) URL/],
    ['crop', ['yes', 2], /crop must be true or false/],
    ['crop_margin', [-5, '10 %', '101%', '2.5px', 'wide', '501px', '1 2 3'], /crop_margin must be one, two or four lengths/],
    ['max_width', [0, -1, 2.5, '2.5', 65_536], /max_width must be a whole number of pixels from 1 to 65535/],
    ['max_height', [0, 'tall'], /max_height must be a whole number of pixels/],
    ['roi', ['0 0 10', '0 0 10 10 20', 'a b c d', '0 0 110% 50%', 5], /roi must be "x1 y1 x2 y2"/],
    ['refine', ['no'], /refine must be true or false/],
  ];
  const cases: CorpusCase[] = [];
  for (const [field, values, detail] of bad) {
    for (const value of values) {
      cases.push({
        name: `${field}: ${JSON.stringify(value)} (JSON)`,
        endpoint: 'base64',
        build: async () => json({ image_base64: (await smallJpeg()).toString('base64'), [field]: value }),
        expect: refused(400, 'invalid_request', { detail }),
      });
    }
    // A form sends text: the JSON-only refusals (a number where a string belongs) do not apply.
    const text = values.find((value) => typeof value === 'string');
    if (typeof text === 'string') {
      cases.push({
        name: `${field}: ${JSON.stringify(text)} (form field)`,
        endpoint: 'multipart',
        build: async () => multipartForm([{ name: 'file', filename: 'photo.jpg', contentType: 'image/jpeg', data: await smallJpeg() }, { name: field, data: text }]),
        expect: refused(400, 'invalid_request', { detail }),
      });
    }
  }
  cases.push(
    { name: 'channels alpha with bg_color', endpoint: 'base64', build: async () => json({ image_base64: (await smallJpeg()).toString('base64'), channels: 'alpha', bg_color: 'fff' }), expect: refused(400, 'invalid_request', { detail: /channels=alpha answers the mask alone, which has no background/ }) },
    { name: 'bg_color and bg_image_url together', endpoint: 'url', build: async (c) => json({ image_url: c.serve(await smallJpeg()), bg_color: 'fff', bg_image_url: c.canaryUrl }), expect: refused(400, 'invalid_request', { detail: /^Send at most one background, not bg_color and bg_image_url/ }) },
    { name: 'roi wholly outside the photo', endpoint: 'base64', build: async () => json({ image_base64: (await smallJpeg()).toString('base64'), roi: '500 500 600 600' }), expect: refused(400, 'invalid_request', { detail: /roi covers no pixel of the 64×48 photo/ }) },
    { name: 'roi with x2 before x1', endpoint: 'base64', build: async () => json({ image_base64: (await smallJpeg()).toString('base64'), roi: '40 0 10 48' }), expect: refused(400, 'invalid_request', { detail: /^roi "40 0 10 48" is empty/ }) },
    { name: 'bg_image_url that is not http(s)', endpoint: 'base64', build: async () => json({ image_base64: (await smallJpeg()).toString('base64'), bg_image_url: 'file:///etc/passwd' }), expect: refused(400, 'url_not_allowed', { detail: /^bg_image_url must use http: or https:/ }) },
    { name: 'bg_image_url that is not an image', endpoint: 'url', build: async (c) => json({ image_url: c.serve(await smallJpeg()), bg_image_url: c.serve(Buffer.from('<html>no</html>')) }), expect: refused(415, 'unsupported_image_format', { detail: /^bg_image_url: / }) },
    {
      name: 'every option at once as form fields, valid (booleans in any case)',
      endpoint: 'multipart',
      build: async () =>
        multipartForm([
          { name: 'file', filename: 'photo.jpg', contentType: 'image/jpeg', data: await smallJpeg() },
          ...Object.entries({ format: 'png', channels: 'rgba', bg_color: '#123456cc', crop: 'FALSE', crop_margin: '10%', max_width: '32', max_height: '30', roi: '0 0 100% 100%', refine: 'False' }).map(([name, data]) => ({ name, data })),
        ]),
      expect: ok({ width: 32, height: 24 }),
    },
  );
  return cases;
}
