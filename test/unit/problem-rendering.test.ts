import { describe, expect, it } from 'vitest';
import { CutoutError, ERRORS, renderProblem, type ErrorCode } from '../../src/errors.js';

// The registry's own promises; test/docs.test.ts checks its codes and statuses against docs/api.md.

const codes = Object.keys(ERRORS) as ErrorCode[];

describe('the error registry', () => {
  it('gives every code a client or server error status, a title and a default message', () => {
    for (const code of codes) {
      const { status, title, message } = ERRORS[code];
      expect(code).toMatch(/^[a-z]+(_[a-z0-9]+)*$/);
      expect(status >= 400 && status <= 599, `${code}: ${status}`).toBe(true);
      // A title is a short name; the message a sentence a caller can act on.
      expect(title, code).toMatch(/^[A-Z][^.]*[^.\s]$/);
      expect(message, code).toMatch(/^[A-Za-z`].{10,}\.$/);
    }
  });

  it('gives no two codes the same title', () => {
    const titles = codes.map((code) => ERRORS[code].title);
    expect(new Set(titles).size).toBe(titles.length);
  });
});

describe('CutoutError', () => {
  it('takes its status from the registry and, without a detail, its message', () => {
    for (const code of codes) {
      const error = new CutoutError(code);
      expect(error).toBeInstanceOf(Error);
      expect(error.name).toBe('CutoutError');
      expect(error.code).toBe(code);
      expect(error.status).toBe(ERRORS[code].status);
      expect(error.message).toBe(ERRORS[code].message);
      expect(error.headers).toEqual({});
      expect(error.cause).toBeUndefined();
      expect(String(error)).toBe(`CutoutError: ${ERRORS[code].message}`);
    }
  });

  it('keeps a detail, a cause and extra headers', () => {
    const cause = new Error('ECONNRESET');
    const error = new CutoutError('queue_full', 'Twelve images are waiting.', { cause, headers: { 'retry-after': '3' } });
    expect(error.message).toBe('Twelve images are waiting.');
    expect(error.cause).toBe(cause);
    expect(error.headers).toEqual({ 'retry-after': '3' });
    expect(new CutoutError('internal_error', undefined, { cause }).message).toBe(ERRORS.internal_error.message);
    expect(new CutoutError('internal_error', undefined, { cause }).headers).toEqual({});
    expect(new CutoutError('not_ready', 'Loading.', { headers: { 'retry-after': '1' } }).cause).toBeUndefined();
    // An empty detail is a detail: what the caller chose to say.
    expect(new CutoutError('not_found', '').message).toBe('');
  });
});

describe('renderProblem', () => {
  it('renders the RFC 9457 body: type, title and status from the registry, the detail, the code and the request id', () => {
    const error = new CutoutError('invalid_base64', 'Character 17 is not Base64.', { cause: new Error('hidden'), headers: { 'x-a': 'b' } });
    expect(renderProblem(error, 'req-1')).toStrictEqual({
      type: 'urn:cutout:error:invalid_base64',
      title: 'Invalid Base64',
      status: 400,
      detail: 'Character 17 is not Base64.',
      code: 'invalid_base64',
      request_id: 'req-1',
    });
    for (const code of codes) {
      expect(renderProblem(new CutoutError(code), 'r')).toStrictEqual({ type: `urn:cutout:error:${code}`, title: ERRORS[code].title, status: ERRORS[code].status, detail: ERRORS[code].message, code, request_id: 'r' });
    }
  });
});
