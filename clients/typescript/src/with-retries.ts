import { CutoutApiError } from './cutout-api-error.js';
import { retryDelay, type RetryPolicy } from './retry-policy.js';

/** Told before each retry: which attempt failed, why, and how long the client waits now. */
export interface RetryEvent {
  /** The attempt that failed, from 1. */
  attempt: number;
  error: CutoutApiError;
  delayMs: number;
}

export interface WithRetriesOptions {
  policy: RetryPolicy;
  signal?: AbortSignal;
  onRetry?: (event: RetryEvent) => void;
  random?: () => number;
}

/**
 * Runs `attempt` until it succeeds, fails with an error that is not worth retrying, or the
 * policy's attempts or time run out; then rejects with the last error. Only
 * {@link CutoutApiError}s are retried; anything else (an abort's reason) passes through.
 */
export async function withRetries<T>(attempt: () => Promise<T>, options: WithRetriesOptions): Promise<T> {
  const started = Date.now();
  for (let number = 1; ; number++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof CutoutApiError)) throw error;
      const delayMs = retryDelay(error, number, Date.now() - started, options.policy, options.random);
      if (delayMs === undefined) throw error;
      options.onRetry?.({ attempt: number, error, delayMs });
      await sleep(delayMs, options.signal);
    }
  }
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
