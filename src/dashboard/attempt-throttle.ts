/**
 * Counts failed attempts per key (an account's email, a client address) in a fixed window:
 * sign-in and the setup code are throttled per account and per address. In memory
 * ({@link MemoryAttemptThrottle}) or, with REDIS_URL, shared by every replica
 * (`RedisAttemptThrottle`).
 */
export interface AttemptThrottle {
  /** Milliseconds until `key` may try again; 0 when it may now. */
  blockedFor(key: string): Promise<number>;
  /** Counts one failed attempt of `key`. */
  fail(key: string): Promise<void>;
  /** Forgets `key`'s failures (after it succeeded). */
  reset(key: string): Promise<void>;
}

export interface AttemptThrottleOptions {
  /** Failed attempts allowed per key within the window; one more is refused. */
  maxFailures: number;
  windowMs: number;
  now?: () => number;
}

/**
 * An {@link AttemptThrottle} in this process's memory. Alone, each process counts its own;
 * with several processes an attacker gets that many times the allowance (still far too few
 * guesses for a password of ten characters or the setup code).
 */
export class MemoryAttemptThrottle implements AttemptThrottle {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #failures = new Map<string, { count: number; resetAt: number }>();

  constructor(options: AttemptThrottleOptions) {
    this.#max = options.maxFailures;
    this.#windowMs = options.windowMs;
    this.#now = options.now ?? Date.now;
  }

  async blockedFor(key: string): Promise<number> {
    const entry = this.#failures.get(key);
    const now = this.#now();
    if (!entry || entry.resetAt <= now) return 0;
    return entry.count >= this.#max ? entry.resetAt - now : 0;
  }

  async fail(key: string): Promise<void> {
    const now = this.#now();
    const entry = this.#failures.get(key);
    if (entry && entry.resetAt > now) entry.count++;
    else this.#failures.set(key, { count: 1, resetAt: now + this.#windowMs });
    if (this.#failures.size > 10_000) this.#forgetExpired(now);
  }

  async reset(key: string): Promise<void> {
    this.#failures.delete(key);
  }

  #forgetExpired(now: number): void {
    for (const [key, entry] of this.#failures) if (entry.resetAt <= now) this.#failures.delete(key);
  }
}
