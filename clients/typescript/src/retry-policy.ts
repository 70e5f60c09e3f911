import type { CutoutApiError } from './cutout-api-error.js';

/**
 * How a call retries. 429 and 503 wait what their `Retry-After` says; connection failures,
 * timeouts, 502 and 504 back off exponentially with jitter; every other error (400, 401,
 * 413, 415, 422, 500, …) fails at once, since sending the same request again would get the
 * same answer.
 */
export interface RetryOptions {
  /** Attempts in all, the first included (1: never retry). Default 5. */
  maxAttempts?: number;
  /**
   * No retry starts once this many ms have passed since the call began, nor one whose wait
   * would end past it; an attempt already under way is bounded by `timeout` instead.
   * Default 120 000.
   */
  maxElapsedMs?: number;
  /** The first backoff's upper bound, doubled at each attempt. Default 500. */
  baseDelayMs?: number;
  /** The largest backoff (a server's `Retry-After` may ask for more, and gets it). Default 8 000. */
  maxDelayMs?: number;
}

/** {@link RetryOptions} with every field filled in. */
export type RetryPolicy = Required<RetryOptions>;

/** The defaults: enough to ride out a busy queue or a restarting server, not to hide an outage. */
export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 5, maxElapsedMs: 120_000, baseDelayMs: 500, maxDelayMs: 8_000 };

/** Fills in a policy; `false` turns retries off. */
export function resolveRetryPolicy(options: RetryOptions | false | undefined, base: RetryPolicy = DEFAULT_RETRY): RetryPolicy {
  if (options === false) return { ...base, maxAttempts: 1 };
  return { ...base, ...Object.fromEntries(Object.entries(options ?? {}).filter(([, value]) => value !== undefined)) };
}

const BACKOFF_STATUSES = new Set([502, 504]);
const RETRY_AFTER_STATUSES = new Set([429, 503]);

/**
 * How long to wait before attempt `failedAttempt + 1`, or undefined when the call must fail
 * with `error` now. `elapsedMs` is the time since the call began; `random` returns [0, 1).
 *
 * @example
 * retryDelay(queueFull, 1, 300, DEFAULT_RETRY) // queueFull.retryAfterMs plus up to 10 %
 */
export function retryDelay(error: CutoutApiError, failedAttempt: number, elapsedMs: number, policy: RetryPolicy, random: () => number = Math.random): number | undefined {
  if (failedAttempt >= policy.maxAttempts) return undefined;
  let delay: number;
  if (RETRY_AFTER_STATUSES.has(error.status) && error.retryAfterMs !== undefined) {
    // The server knows how long its queue or window is: never come back sooner. The jitter
    // spreads out the clients it gave the same answer.
    delay = error.retryAfterMs + random() * Math.min(1000, error.retryAfterMs * 0.1);
  } else if (RETRY_AFTER_STATUSES.has(error.status) || BACKOFF_STATUSES.has(error.status) || error.code === 'connection_failed' || error.code === 'timeout') {
    // "Equal jitter": half the window for sure, so the waits do grow, half at random.
    const window = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (failedAttempt - 1));
    delay = window / 2 + random() * (window / 2);
  } else {
    return undefined;
  }
  return elapsedMs + delay > policy.maxElapsedMs ? undefined : delay;
}

/**
 * A `Retry-After` header in ms: delta-seconds or an HTTP date (RFC 9110 §10.2.3); undefined
 * when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Every HTTP-date form names its month; Date.parse alone would take "-5" for a year.
  const date = /[A-Za-z]{3}/.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
