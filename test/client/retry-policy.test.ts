import { describe, expect, it } from 'vitest';
import { CutoutApiError, DEFAULT_RETRY, type CutoutErrorCode } from '@cutout/client';
import { parseRetryAfter, resolveRetryPolicy, retryDelay } from '../../clients/typescript/src/retry-policy.js';

const failure = (status: number, code: CutoutErrorCode, retryAfterMs?: number) => new CutoutApiError({ status, code, detail: 'test', retryAfterMs });
const lowest = () => 0;
const highest = () => 0.999_999;

describe('retryDelay', () => {
  it('waits what Retry-After says on 429 and 503, with at most 10 % (and at most 1 s) of jitter on top', () => {
    for (const error of [failure(429, 'rate_limited', 2000), failure(503, 'queue_full', 3000), failure(503, 'not_ready', 5000)]) {
      expect(retryDelay(error, 1, 0, DEFAULT_RETRY, lowest)).toBe(error.retryAfterMs);
      expect(retryDelay(error, 1, 0, DEFAULT_RETRY, highest)).toBeCloseTo(error.retryAfterMs! * 1.1, 0);
    }
    // Longer than maxDelayMs: the server's word still wins.
    expect(retryDelay(failure(429, 'rate_limited', 30_000), 1, 0, DEFAULT_RETRY, lowest)).toBe(30_000);
    expect(retryDelay(failure(429, 'rate_limited', 30_000), 1, 0, DEFAULT_RETRY, highest)).toBeLessThanOrEqual(31_000);
  });

  it('backs off exponentially with jitter on connection failures, timeouts, 502 and 504, up to maxDelayMs', () => {
    const policy = resolveRetryPolicy({ baseDelayMs: 100, maxDelayMs: 1000, maxAttempts: 10 });
    for (const error of [failure(0, 'connection_failed'), failure(0, 'timeout'), failure(502, 'upstream_fetch_failed'), failure(504, 'deadline_exceeded'), failure(502, 'unexpected_response')]) {
      const windows = [1, 2, 3, 4, 5, 6].map((attempt) => [retryDelay(error, attempt, 0, policy, lowest), retryDelay(error, attempt, 0, policy, highest)]);
      expect(windows.map(([low]) => low)).toEqual([50, 100, 200, 400, 500, 500]);
      expect(windows.map(([, high]) => Math.round(high!))).toEqual([100, 200, 400, 800, 1000, 1000]);
    }
    // A 503 without Retry-After (a proxy's) backs off the same way.
    expect(retryDelay(failure(503, 'unexpected_response'), 2, 0, policy, lowest)).toBe(100);
  });

  it('never retries other errors: the same request would get the same answer', () => {
    const final: [number, CutoutErrorCode][] = [
      [400, 'invalid_request'],
      [400, 'url_not_allowed'],
      [401, 'invalid_token'],
      [401, 'revoked_token'],
      [401, 'expired_token'],
      [404, 'not_found'],
      [413, 'payload_too_large'],
      [415, 'unsupported_image_format'],
      [422, 'image_decode_failed'],
      [500, 'internal_error'],
      [500, 'unexpected_response'],
    ];
    for (const [status, code] of final) expect(retryDelay(failure(status, code), 1, 0, DEFAULT_RETRY), code).toBeUndefined();
  });

  it('stops at maxAttempts, and before a wait that would end past maxElapsedMs', () => {
    const policy = resolveRetryPolicy({ maxAttempts: 3, maxElapsedMs: 10_000 });
    const busy = failure(503, 'queue_full', 2000);
    expect(retryDelay(busy, 2, 0, policy, lowest)).toBe(2000);
    expect(retryDelay(busy, 3, 0, policy, lowest)).toBeUndefined();
    expect(retryDelay(busy, 1, 7_900, policy, lowest)).toBe(2000);
    expect(retryDelay(busy, 1, 8_100, policy, lowest)).toBeUndefined();
    expect(retryDelay(busy, 1, 0, resolveRetryPolicy(false), lowest)).toBeUndefined();
  });
});

describe('parseRetryAfter', () => {
  it('reads delta-seconds and HTTP dates, and nothing else', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
  });
});
