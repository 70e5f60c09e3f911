import { CutoutError } from '../errors.js';
import { IdleCollector } from '../threads/idle-collector.js';

/** Bytes a removal holds from the budget; `release` gives them back (once, however often called). */
export interface MemoryReservation {
  readonly bytes: number;
  release(): void;
}

interface Waiter {
  bytes: number;
  admit: () => void;
}

/**
 * How long a request may wait for memory: until `giveUpAt` (a `performance.now()` time), after
 * which it could no longer finish within its deadline; then 503 `queue_full` with
 * `retryAfterSeconds`.
 */
export interface Patience {
  giveUpAt: number;
  retryAfterSeconds: number;
}

/**
 * A count of bytes shared by the removals in flight and waiting for the model
 * (CUTOUT_MEMORY_BUDGET): each reserves its estimate (`memory-estimate.ts`) before its photo
 * is decoded and releases it once its answer is sent or it fails. One that does not fit now
 * waits, in arrival order, and one that fits is let past an earlier one still too large for
 * what is free; one whose estimate alone is over the whole budget is refused at once
 * (503 `over_memory_budget`), since waiting would never help.
 *
 * @example
 * const held = await budget.reserve(estimate, signal)
 * try { … } finally { held.release() }
 */
export class MemoryBudget {
  readonly total: number;
  readonly #maxWaiting: number;
  readonly #retryAfterSeconds: () => number;
  readonly #waiting: Waiter[] = [];
  #reserved = 0;
  /**
   * Once nothing is reserved for a while, the main thread's garbage (the last images' buffers)
   * is collected; only then: a full collection here stops the event loop (41–126 ms measured
   * after large photos), and the large photos' carried-over memory was the finish thread's.
   */
  readonly #idle = new IdleCollector();

  /**
   * `maxWaiting`: requests that may wait for memory at once; one more is refused with 503
   * queue_full, whose Retry-After is `retryAfterSeconds()` (the inference queue's, so that a
   * full queue says the same whichever wait is full).
   */
  constructor(total: number, options: { maxWaiting: number; retryAfterSeconds: () => number }) {
    this.total = total;
    this.#maxWaiting = options.maxWaiting;
    this.#retryAfterSeconds = options.retryAfterSeconds;
  }

  /**
   * The one rule of a full wait for memory: throws 503 `queue_full` when as many removals as
   * may wait already do. `reserve` asks it of a removal that does not fit; the service asks
   * it of a request on arrival while others wait, since it would wait too.
   */
  assertRoomToWait(): void {
    if (this.#waiting.length >= this.#maxWaiting) {
      throw new CutoutError('queue_full', `${this.#waiting.length} images are already waiting for memory; retry in a few seconds.`, {
        headers: { 'retry-after': String(this.#retryAfterSeconds()) },
      });
    }
  }

  /** Bytes reserved by removals in flight now. */
  get reserved(): number {
    return this.#reserved;
  }

  /** Removals waiting for memory now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Reserves `bytes`, at once when they fit, else when earlier removals have released enough.
   * Throws `over_memory_budget` at once when `bytes` exceed the whole budget, `queue_full`
   * when too many already wait or when memory is not free by `patience.giveUpAt` (at once when
   * that has passed), and the signal's reason if it aborts while waiting.
   */
  async reserve(bytes: number, signal?: AbortSignal, patience?: Patience): Promise<MemoryReservation> {
    signal?.throwIfAborted();
    if (bytes > this.total) {
      const mib = (n: number) => `${Math.ceil(n / 2 ** 20)} MiB`;
      throw new CutoutError(
        'over_memory_budget',
        `This image with these options needs about ${mib(bytes)} while it is removed, more than this server's memory budget of ${mib(this.total)} for all requests together: send a smaller image or ask for a smaller answer.`,
        { headers: { 'retry-after': '60' } },
      );
    }
    if (this.#reserved + bytes <= this.total) return this.#hold(bytes);
    this.assertRoomToWait();
    const arrived = performance.now();
    const outOfTime = ({ retryAfterSeconds }: Patience) =>
      new CutoutError('queue_full', `The memory this image needs was not free in time for it to finish within its deadline (waited ${((performance.now() - arrived) / 1000).toFixed(1)} s); retry later.`, {
        headers: { 'retry-after': String(retryAfterSeconds) },
      });
    if (patience && patience.giveUpAt <= arrived) throw outOfTime(patience);
    await new Promise<void>((resolve, reject) => {
      const leave = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const at = this.#waiting.indexOf(waiter);
        if (at >= 0) this.#waiting.splice(at, 1);
      };
      const waiter: Waiter = {
        bytes,
        admit: () => {
          leave();
          resolve();
        },
      };
      const onAbort = () => {
        leave();
        reject(signal?.reason);
      };
      const timer = patience
        ? setTimeout(() => {
            leave();
            reject(outOfTime(patience));
          }, patience.giveUpAt - arrived)
        : undefined;
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
    });
    // #admit counted the bytes already when it let this waiter in.
    return this.#reservation(bytes);
  }

  #hold(bytes: number): MemoryReservation {
    this.#change(bytes);
    return this.#reservation(bytes);
  }

  #reservation(bytes: number): MemoryReservation {
    let released = false;
    return {
      bytes,
      release: () => {
        if (released) return;
        released = true;
        this.#change(-bytes);
        this.#admit();
      },
    };
  }

  /** Changes the bytes reserved; the thread is busy while any are. */
  #change(delta: number): void {
    const before = this.#reserved;
    this.#reserved += delta;
    if (before === 0 && this.#reserved > 0) this.#idle.begin();
    else if (before > 0 && this.#reserved === 0) this.#idle.end();
  }

  /** Lets in every waiter, in arrival order, whose bytes fit in what is free now. */
  #admit(): void {
    for (let i = 0; i < this.#waiting.length; ) {
      const waiter = this.#waiting[i];
      if (this.#reserved + waiter.bytes > this.total) {
        i++;
        continue;
      }
      this.#waiting.splice(i, 1);
      this.#change(waiter.bytes);
      waiter.admit();
    }
  }
}

/**
 * A request's reservations, released together: the first, and any taken later (a background
 * known only once fetched). One added after the release is released at once, so a reservation
 * that arrives after its removal failed is not kept.
 */
export class Reservations {
  readonly #held: MemoryReservation[] = [];
  #released = false;

  add(reservation: MemoryReservation): void {
    if (this.#released) reservation.release();
    else this.#held.push(reservation);
  }

  release(): void {
    this.#released = true;
    for (const held of this.#held.splice(0)) held.release();
  }
}
