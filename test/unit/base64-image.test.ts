import { describe, expect, it } from 'vitest';
import { CutoutError, type ErrorCode } from '../../src/errors.js';
import { decodeBase64Image } from '../../src/api/base64-image.js';

// Fixed cases for each branch of the decoder, beside the fast-check properties of
// test/property-parsing.test.ts: the same inputs every run, so a mutant is killed every time.

const LIMIT = 1000;

function refusal(text: string, maxBytes = LIMIT): { code: ErrorCode; message: string } {
  try {
    decodeBase64Image(text, maxBytes);
  } catch (error) {
    expect(error).toBeInstanceOf(CutoutError);
    return { code: (error as CutoutError).code, message: (error as CutoutError).message };
  }
  throw new Error(`${JSON.stringify(text)} was accepted`);
}

const hex = (text: string, maxBytes = LIMIT) => decodeBase64Image(text, maxBytes).toString('hex');

describe('decodeBase64Image', () => {
  it('decodes standard Base64, padded or not', () => {
    expect(hex('3q2+7w==')).toBe('deadbeef');
    expect(hex('3q2+7w')).toBe('deadbeef');
    expect(hex('AAEC')).toBe('000102');
    expect(hex('AAE=')).toBe('0001');
  });

  it('decodes the URL-safe alphabet like the standard one', () => {
    expect(hex('-_-_')).toBe(hex('+/+/'));
    expect(hex('-_-_')).toBe('fbffbf');
  });

  it('strips a data: prefix, with or without a media type and parameters, in any case', () => {
    expect(hex('data:image/png;base64,3q2+7w==')).toBe('deadbeef');
    expect(hex('DATA:IMAGE/PNG;BASE64,3q2+7w==')).toBe('deadbeef');
    expect(hex('data:;base64,3q2+7w==')).toBe('deadbeef');
    expect(hex('data:image/svg+xml;charset=utf-8;name=a.b;base64,3q2+7w')).toBe('deadbeef');
  });

  it('does not take a data: prefix that is not Base64, or not at the start', () => {
    expect(refusal('data:image/png,3q2+7w==')).toEqual({ code: 'invalid_base64', message: 'image_base64 has a character that is not Base64 at position 4: ":".' });
    expect(refusal('data:image/png;base64;3q2+7w==').code).toBe('invalid_base64');
    expect(refusal('xdata:image/png;base64,3q2+7w==').code).toBe('invalid_base64');
    expect(refusal('AAAAdata:image/png;base64,3q2+7w==')).toEqual({ code: 'invalid_base64', message: 'image_base64 has a character that is not Base64 at position 8: ":".' });
    expect(refusal('data:image/png;base64,data:image/png;base64,3q2+7w==').code).toBe('invalid_base64');
  });

  it('ignores line breaks and spaces anywhere, as MIME wraps Base64', () => {
    expect(hex('3q2+\r\n7w==')).toBe('deadbeef');
    expect(hex(' 3q2+7w== ')).toBe('deadbeef');
    expect(hex('3q\t2+ 7w\n')).toBe('deadbeef');
    expect(hex('AAAA\nAAAA')).toBe('000000000000');
  });

  it('names the first character outside the alphabet, and where it is', () => {
    expect(refusal('AA!A')).toEqual({ code: 'invalid_base64', message: 'image_base64 has a character that is not Base64 at position 2: "!".' });
    expect(refusal('AAAA*AAA').message).toBe('image_base64 has a character that is not Base64 at position 4: "*".');
    expect(refusal('AAA.').message).toBe('image_base64 has a character that is not Base64 at position 3: ".".');
    // Beyond ASCII Node's decoder reads only the low byte: ī (U+012B) would pass for '+'.
    expect(refusal('AAA\u012b').message).toBe('image_base64 has a character that is not Base64 at position 3: "ī".');
    expect(refusal('\u012bAAAAAA').code).toBe('invalid_base64');
  });

  it('refuses padding anywhere but at the end, and more than two = signs', () => {
    expect(refusal('A===').message).toBe('image_base64 has a character that is not Base64 at position 1: "=".');
    expect(refusal('AA=A').message).toBe('image_base64 has a character that is not Base64 at position 2: "=".');
    expect(refusal('AAAA==').message).toBe('image_base64 has padding in the wrong place.');
    expect(refusal('AA=').message).toBe('image_base64 has padding in the wrong place.');
    expect(refusal('AAAAAA=').message).toBe('image_base64 has padding in the wrong place.');
    expect(refusal('3q2+7w=').message).toBe('image_base64 has padding in the wrong place.');
    expect(refusal('==').message).toBe('image_base64 has padding in the wrong place.');
  });

  it('refuses a length no Base64 text can have', () => {
    for (const text of ['A', 'AAAAA', 'AAAAA=', 'AAAAAAAAA', 'AAAA A']) {
      expect(refusal(text)).toEqual({ code: 'invalid_base64', message: 'image_base64 has a length no Base64 text can have (a character is missing or extra).' });
    }
  });

  it('refuses an empty image, spaces or a bare prefix included', () => {
    for (const text of ['', '  \n ', 'data:image/png;base64,']) {
      expect(refusal(text)).toEqual({ code: 'invalid_request', message: 'image_base64 is empty.' });
    }
  });

  it('takes exactly maxBytes bytes and refuses one more, however the text is spelled', () => {
    expect(hex('AAAAAAAA', 6)).toBe('000000000000');
    expect(hex('AAAA\nAAAA', 6)).toBe('000000000000');
    expect(hex('AAAAAAA', 5)).toBe('0000000000');
    expect(refusal('AAAAAAAA', 5)).toEqual({ code: 'payload_too_large', message: 'The decoded image has 6 bytes; the limit is 5.' });
    expect(refusal('AAAA\nAAAA', 5)).toEqual({ code: 'payload_too_large', message: 'The decoded image has 6 bytes; the limit is 5.' });
    expect(refusal('AAAAAAA=', 4).code).toBe('payload_too_large');
  });
});
