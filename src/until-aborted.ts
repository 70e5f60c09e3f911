/**
 * Settles like `work`, or rejects with the signal's reason as soon as it aborts (at once if it
 * already has); `work` itself runs on. For steps that cannot be cancelled themselves (a DNS
 * lookup, a model run) but whose caller must stop waiting.
 *
 * @example const bytes = await untilAborted(fetching, request.signal)
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
