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
 * Memory the work finished since the last collection held, past which the thread collects at
 * once rather than when idle: one large photo's (a 49 MP one's RGBA is 196 MB).
 */
export const COLLECT_AFTER_BYTES = 128 * 2 ** 20;

/**
 * Collects a thread's garbage once its work has stopped for a while, or once the work that
 * ended since the last collection held {@link COLLECT_AFTER_BYTES}. A large image's buffers
 * (hundreds of MiB outside V8's heap) are freed only when the objects that hold them are
 * collected. A thread with nothing more to do allocates nothing that would set off a
 * collection: after a burst, the process would keep them until the next request. A thread
 * kept busy by small photos collects its small heap often, but not the old objects that hold
 * a large photo's buffers: the next large photo would be decoded beside them.
 */
export class IdleCollector {
  readonly #idleMs: number;
  readonly #collectAfterBytes: number;
  readonly #collect: () => void;
  #busy = 0;
  #idleTimer: NodeJS.Timeout | undefined;
  #dueTimer: NodeJS.Timeout | undefined;
  /** Bytes held by the work that ended since the last collection. */
  #owed = 0;

  /** `collect`: what runs; V8's full collection unless a test gives its own. */
  constructor({ idleMs = IDLE_COLLECT_MS, collectAfterBytes = COLLECT_AFTER_BYTES, collect }: { idleMs?: number; collectAfterBytes?: number; collect?: () => void } = {}) {
    this.#idleMs = idleMs;
    this.#collectAfterBytes = collectAfterBytes;
    this.#collect = collect ?? (() => fullCollection()());
  }

  /** Work began. */
  begin(): void {
    this.#busy++;
    clearTimeout(this.#idleTimer);
  }

  /**
   * Work ended, having held about `heldBytes`. Once the work ended since the last collection
   * held {@link COLLECT_AFTER_BYTES}, the garbage is collected after the current task (the
   * answer is on its way first); else once no work is left for `idleMs`.
   */
  end(heldBytes = 0): void {
    this.#busy = Math.max(0, this.#busy - 1);
    this.#owed += heldBytes;
    if (this.#owed >= this.#collectAfterBytes) {
      this.#dueTimer ??= setTimeout(() => this.#collectNow(), 0).unref();
    } else if (this.#busy === 0) {
      clearTimeout(this.#idleTimer);
      this.#idleTimer = setTimeout(() => this.#collectNow(), this.#idleMs).unref();
    }
  }

  #collectNow(): void {
    clearTimeout(this.#idleTimer);
    clearTimeout(this.#dueTimer);
    this.#dueTimer = undefined;
    this.#owed = 0;
    this.#collect();
  }
}
