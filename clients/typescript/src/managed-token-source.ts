/** What one exchange of the Token ID gave. */
export interface ManagedTokenGrant {
  token: string;
  /** The token's lifetime as the server gave it (`expires_in`), in seconds. */
  expiresInSeconds: number;
}

interface HeldToken {
  token: string;
  /** When to stop using it, on this client's clock: before the server's `expires_at`. */
  renewAt: number;
}

/** Renew this long before expiry: a minute, or a fifth of a short lifetime. */
const RENEWAL_MARGIN_MS = 60_000;
const RENEWAL_MARGIN_SHARE = 0.2;

/**
 * Holds the managed token: exchanges the Token ID on first use, again once the token is
 * near its end, and again after the server called it expired. Concurrent callers share one
 * exchange. The lifetime is counted from `expires_in` on this client's clock, not from
 * `expires_at`, so a client whose clock is off from the server's still renews in time.
 */
export class ManagedTokenSource {
  readonly #exchange: () => Promise<ManagedTokenGrant>;
  readonly #now: () => number;
  #held: HeldToken | undefined;
  #pending: Promise<HeldToken> | undefined;

  /** `exchange` asks the server for a new managed token; `now` is the clock in ms. */
  constructor(exchange: () => Promise<ManagedTokenGrant>, now: () => number) {
    this.#exchange = exchange;
    this.#now = now;
  }

  /**
   * A managed token that is good for a while yet, exchanging for one if needed. An abort of
   * `signal` gives up waiting but leaves the exchange running for the other callers.
   */
  async get(signal?: AbortSignal): Promise<string> {
    signal?.throwIfAborted();
    if (this.#held && this.#now() < this.#held.renewAt) return this.#held.token;
    this.#pending ??= this.#startExchange();
    return (await abortable(this.#pending, signal)).token;
  }

  /** Forgets `token` (the server answered `expired_token` for it) unless a newer one replaced it already. */
  invalidate(token: string): void {
    if (this.#held?.token === token) this.#held = undefined;
  }

  async #startExchange(): Promise<HeldToken> {
    try {
      const asked = this.#now();
      const grant = await this.#exchange();
      const lifetimeMs = grant.expiresInSeconds * 1000;
      // Counted from when it was asked for: the server's clock started no earlier.
      const held = { token: grant.token, renewAt: asked + lifetimeMs - Math.min(RENEWAL_MARGIN_MS, lifetimeMs * RENEWAL_MARGIN_SHARE) };
      this.#held = held;
      return held;
    } finally {
      this.#pending = undefined;
    }
  }
}

/** `promise`, or the signal's reason as soon as it aborts (the promise itself runs on). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
