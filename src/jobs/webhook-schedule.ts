/** When to try a webhook again, and for how long. */
export interface WebhookSchedule {
  /** The wait after failed attempt `attempt` (from 1), in ms. */
  delayAfter(attempt: number): number;
  /** How long after the job ended attempts go on, in ms; past it the delivery is `failed`. */
  windowMs: number;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** The longest wait after each failed attempt; the last one repeats. */
export const WEBHOOK_RETRY_CEILINGS: readonly number[] = [10 * SECOND, 30 * SECOND, MINUTE, 5 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR];
/** The shortest wait: a retry never follows its failure at once. */
export const WEBHOOK_RETRY_FLOOR_MS = SECOND;
/** How long after the job ended a delivery is tried. */
export const WEBHOOK_RETRY_WINDOW_MS = 24 * HOUR;

/**
 * The retry schedule with full jitter: the wait after failed attempt n is drawn uniformly
 * between {@link WEBHOOK_RETRY_FLOOR_MS} and the n-th of {@link WEBHOOK_RETRY_CEILINGS}, so
 * the deliveries of many jobs that failed together (a receiver that was down) come back
 * spread over the whole interval rather than all at once. On average that is about one attempt
 * an hour once the ceilings reach 2 h, some 30 attempts in the 24-hour window.
 *
 * @example jitteredSchedule(() => 0.5).delayAfter(1) // 5500 (ms): halfway between 1 s and 10 s
 */
export function jitteredSchedule(random: () => number = Math.random): WebhookSchedule {
  return {
    delayAfter(attempt) {
      const ceiling = WEBHOOK_RETRY_CEILINGS[Math.min(Math.max(attempt, 1), WEBHOOK_RETRY_CEILINGS.length) - 1];
      return Math.round(WEBHOOK_RETRY_FLOOR_MS + random() * (ceiling - WEBHOOK_RETRY_FLOOR_MS));
    },
    windowMs: WEBHOOK_RETRY_WINDOW_MS,
  };
}

/** The schedule the sender uses unless given another. */
export const WEBHOOK_SCHEDULE: WebhookSchedule = jitteredSchedule();
