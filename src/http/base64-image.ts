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
  let text = field.replace(DATA_URL, '');
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
