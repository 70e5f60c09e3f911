import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How long a thread must have been idle before its garbage is collected. */
export const IDLE_COLLECT_MS = 2000;

let collect: (() => void) | undefined;

/**
 * V8's full collection, which Node exposes only behind `--expose-gc`: the flag is set for the
 * process and the function taken from a fresh context (per thread, as each has its own heap).
 * A no-op where that fails.
 */
export function fullCollection(): () => void {
  if (!collect) {
    try {
      setFlagsFromString('--expose-gc');
      collect = runInNewContext('gc') as () => void;
    } catch {
      collect = () => {};
    }
  }
  return collect;
}

/**
 * Collects a thread's garbage once its work has stopped for a while. A large image's buffers
 * (hundreds of MiB outside V8's heap) are freed only when the objects that hold them are
 * collected, and a thread with nothing more to do allocates nothing that would set off a
 * collection: after a burst, the process would keep them until the next request.
 */
export class IdleCollector {
  readonly #idleMs: number;
  readonly #collect: () => void;
  #busy = 0;
  #timer: NodeJS.Timeout | undefined;

  /** `collect`: what runs once idle; V8's full collection unless a test gives its own. */
  constructor(idleMs = IDLE_COLLECT_MS, collect?: () => void) {
    this.#idleMs = idleMs;
    this.#collect = collect ?? (() => fullCollection()());
  }

  /** Work began. */
  begin(): void {
    this.#busy++;
    clearTimeout(this.#timer);
  }

  /** Work ended; once none is left for `idleMs`, the thread's garbage is collected. */
  end(): void {
    this.#busy = Math.max(0, this.#busy - 1);
    if (this.#busy > 0) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(this.#collect, this.#idleMs).unref();
  }
}
