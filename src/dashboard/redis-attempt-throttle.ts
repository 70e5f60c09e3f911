import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { MemoryAttemptThrottle, type AttemptThrottle, type AttemptThrottleOptions } from './attempt-throttle.js';

export interface RedisAttemptThrottleOptions extends AttemptThrottleOptions {
  /** Names this throttle's keys in Redis (`account`, `address`), apart from the other throttle's. */
  name: string;
  /** Told when Redis did not answer and this process's own count was used instead. */
  onRedisError?: (error: unknown) => void;
}

/**
 * An {@link AttemptThrottle} shared by every replica through Redis: one counter per key,
 * created with the window as its expiry on the first failure, so that failures at any
 * replica count against the same allowance.
 *
 * When Redis does not answer it neither lets every attempt through nor locks every owner
 * out: each process also counts in its own memory, and uses the larger of the two counts, so
 * that while Redis is away the throttle holds per process, as it did before replicas shared
 * one (docs/deployment.md). Keys are SHA-256 hashes: no email or address is written to Redis.
 */
export class RedisAttemptThrottle implements AttemptThrottle {
  readonly #redis: Redis;
  readonly #local: MemoryAttemptThrottle;
  readonly #max: number;
  readonly #windowMs: number;
  readonly #prefix: string;
  readonly #onRedisError: (error: unknown) => void;

  constructor(redis: Redis, options: RedisAttemptThrottleOptions) {
    this.#redis = redis;
    this.#local = new MemoryAttemptThrottle(options);
    this.#max = options.maxFailures;
    this.#windowMs = options.windowMs;
    this.#prefix = `cutout-throttle:${options.name}:`;
    this.#onRedisError = options.onRedisError ?? (() => {});
  }

  #key(key: string): string {
    return this.#prefix + createHash('sha256').update(key).digest('base64url');
  }

  async blockedFor(key: string): Promise<number> {
    const local = await this.#local.blockedFor(key);
    try {
      const [[countError, count], [ttlError, ttl]] = (await this.#redis.multi().get(this.#key(key)).pttl(this.#key(key)).exec()) as [Error | null, unknown][];
      if (countError || ttlError) throw countError ?? ttlError;
      const shared = Number(count ?? 0) >= this.#max && Number(ttl) > 0 ? Number(ttl) : 0;
      return Math.max(local, shared);
    } catch (error) {
      this.#onRedisError(error);
      return local;
    }
  }

  async fail(key: string): Promise<void> {
    await this.#local.fail(key);
    try {
      // SET … NX PX starts the window with the first failure; INCR keeps its expiry.
      const results = await this.#redis.multi().set(this.#key(key), '0', 'PX', this.#windowMs, 'NX').incr(this.#key(key)).exec();
      const failed = results?.find(([error]) => error)?.[0];
      if (failed) throw failed;
    } catch (error) {
      this.#onRedisError(error);
    }
  }

  async reset(key: string): Promise<void> {
    await this.#local.reset(key);
    try {
      await this.#redis.del(this.#key(key));
    } catch (error) {
      this.#onRedisError(error);
    }
  }
}
