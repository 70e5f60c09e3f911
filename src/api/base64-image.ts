import { CutoutError } from '../errors.js';

const DATA_URL = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)?(;[a-z0-9-]+=[^;,]*)*;base64,/i;
const BASE64_BODY = /^[A-Za-z0-9+/_-]*$/;

/**
 * Decodes the `image_base64` field. Accepted: standard Base64, with or without `=` padding,
 * with line breaks or spaces (as MIME wraps it), a `data:image/…;base64,` prefix, and the
 * URL-safe alphabet (`-_`), which is unambiguous. Anything else is `invalid_base64`, with
 * the position of the first bad character. The decoded size is checked against `maxBytes`.
 *
 * @example decodeBase64Image('data:image/png;base64,iVBORw0KGgo=', 25e6)
 */
export function decodeBase64Image(field: string, maxBytes: number): Buffer {
  const text = field.replace(DATA_URL, '');
  // The usual case, one clean Base64 text, is decoded without first scanning it twice with
  // regular expressions, which held the event loop for milliseconds (docs/internals/performance.md). In an ASCII
  // string (its UTF-8 length is its length) Node's decoder skips characters outside the
  // alphabet, whitespace included, and stops at a `=`, so the result has floor(3/4 · length)
  // bytes exactly when every character was Base64: no text of another length, 4k + 1 aside,
  // decodes to as many. (Beyond ASCII it does not skip: one astral character decodes to a
  // byte, which the property tests found.) Anything else goes the careful way, which finds
  // what is wrong and says so.
  const body = text.replace(/={1,2}$/, '');
  const size = Math.floor((body.length * 3) / 4);
  const plain = body.length % 4 !== 1 && (text.length === body.length || text.length % 4 === 0) && size > 0 && size <= maxBytes;
  if (plain && Buffer.byteLength(text) === text.length) {
    const bytes = Buffer.from(body, 'base64');
    if (bytes.length === size) return bytes;
  }
  return decodeCarefully(text, maxBytes);
}

function decodeCarefully(given: string, maxBytes: number): Buffer {
  let text = given;
  if (/\s/.test(text)) text = text.replace(/\s+/g, '');
  const body = text.replace(/={1,2}$/, '');
  if (!BASE64_BODY.test(body)) {
    const at = [...body].findIndex((c) => !/[A-Za-z0-9+/_-]/.test(c));
    throw new CutoutError('invalid_base64', `image_base64 has a character that is not Base64 at position ${at}: ${JSON.stringify(body[at])}.`);
  }
  if (body.length % 4 === 1) throw new CutoutError('invalid_base64', 'image_base64 has a length no Base64 text can have (a character is missing or extra).');
  if (text.length !== body.length && text.length % 4 !== 0) throw new CutoutError('invalid_base64', 'image_base64 has padding in the wrong place.');
  const size = Math.floor((body.length * 3) / 4);
  if (size > maxBytes) throw new CutoutError('payload_too_large', `The decoded image has ${size} bytes; the limit is ${maxBytes}.`);
  if (size === 0) throw new CutoutError('invalid_request', 'image_base64 is empty.');
  return Buffer.from(body, 'base64');
}
