import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

// Takes the key when it is free, or extends it when this holder has it: one round trip, atomic.
const TAKE_OR_EXTEND = `
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('pexpire', KEYS[1], ARGV[2]) return 1 end
return 0`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

/**
 * A lease on one Redis key, so that of several replicas one at a time does a chore (the jobs'
 * sweeper). The holder renews it by asking again before it expires; a holder that dies loses it
 * after `ttlMs`, and the next replica to ask takes it.
 *
 * @example const lease = new RedisLease(redis, 'cutout:sweeper', 60_000); if (await lease.held()) sweep()
 */
export class RedisLease {
  readonly #holder = randomBytes(12).toString('base64url');

  constructor(
    readonly redis: Redis,
    readonly key: string,
    readonly ttlMs: number,
  ) {}

  /** True when this holder has the lease (taken or extended now); false when another has it or Redis cannot be reached. */
  async held(): Promise<boolean> {
    try {
      return (await this.redis.eval(TAKE_OR_EXTEND, 1, this.key, this.#holder, String(this.ttlMs))) === 1;
    } catch {
      return false;
    }
  }

  /** Gives the lease up if this holder has it, so another replica need not wait for it to expire. */
  async release(): Promise<void> {
    await this.redis.eval(RELEASE, 1, this.key, this.#holder).catch(() => undefined);
  }
}
