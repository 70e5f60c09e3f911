import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';

/**
 * Opens the process's one connection to Redis (REDIS_URL), which the rate limit and the
 * dashboard's sign-in throttle share. It fails fast rather than waits: a command sent while
 * the connection is down rejects at once (no offline queue), one that gets no answer within
 * a second rejects too, and each caller then does without Redis (the rate limit lets the
 * request through, the throttle counts in this process; docs/deployment.md). It reconnects by
 * itself, and says in the log when Redis went away and when it is back, once each, not at
 * every retry.
 *
 * @example const redis = openRedis(config.redisUrl, app.log)
 */
export function openRedis(url: string, log: FastifyBaseLogger): Redis {
  const redis = new Redis(url, {
    connectTimeout: 1000,
    commandTimeout: 1000,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    // Retry every half second at most, so that a Redis that comes back is used again soon.
    retryStrategy: (times) => Math.min(times * 100, 500),
  });
  let away = false;
  redis.on('error', (error: Error) => {
    if (away) return;
    away = true;
    log.warn({ err: error }, 'Redis cannot be reached: rate limits let requests through and sign-in throttling counts in this process until it is back');
  });
  redis.on('ready', () => {
    if (!away) return;
    away = false;
    log.info('Redis is reachable again');
  });
  return redis;
}
