import type { ConnectionOptions } from 'bullmq';

/**
 * The connection of Cutout's BullMQ queues and workers (`fleet-runner.ts`'s items,
 * `fleet-upkeep.ts`'s schedulers): their own, not the app's fail-fast one (`open-redis.ts`),
 * because a worker blocks on Redis and must retry for ever.
 */
export function bullmqConnection(redisUrl: string): ConnectionOptions {
  return { url: redisUrl, maxRetriesPerRequest: null };
}

/**
 * BullMQ's `drainDelay` for both workers: the seconds a fetch blocks on Redis while the queue is
 * empty. A worker's close waits for the fetch under way to return, so this is what stopping an
 * idle replica waits for, per worker (BullMQ's default is 5); an idle replica asks Redis once a
 * second instead of once in five.
 */
export const WORKER_DRAIN_DELAY_SECONDS = 1;
