import type { DailyUsage } from '../store/store.js';

/** Background requests of one day (or of a whole period). */
export interface UsageCounts {
  succeeded: number;
  refused: number;
  failed: number;
  /** Of the succeeded removals' input images. */
  megapixels: number;
}

export interface UsageSummary {
  /** The period's days, YYYY-MM-DD (UTC), oldest first, ending today. */
  days: string[];
  /** All tokens together, one entry per day of `days`. */
  daily: UsageCounts[];
  /** The whole period, all tokens. */
  total: UsageCounts;
  /** Per user token id: one entry per day, and the period's total. */
  perToken: Map<string, { daily: UsageCounts[]; total: UsageCounts }>;
}

const zero = (): UsageCounts => ({ succeeded: 0, refused: 0, failed: 0, megapixels: 0 });

function add(into: UsageCounts, row: UsageCounts): void {
  into.succeeded += row.succeeded;
  into.refused += row.refused;
  into.failed += row.failed;
  into.megapixels += row.megapixels;
}

/** Every request counted, whatever its outcome. */
export const requestCount = (counts: UsageCounts) => counts.succeeded + counts.refused + counts.failed;

/** Share of requests that did not succeed, or undefined when there were none. */
export function errorRate(counts: UsageCounts): number | undefined {
  const all = requestCount(counts);
  return all === 0 ? undefined : (counts.refused + counts.failed) / all;
}

/** The `count` UTC days ending with `today`, oldest first, as YYYY-MM-DD. */
export function lastDays(today: Date, count = 30): string[] {
  const end = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
  return Array.from({ length: count }, (_, i) => new Date(end - (count - 1 - i) * 86_400_000).toISOString().slice(0, 10));
}

/**
 * Folds the store's rows (per token and day) into the dashboard's view: per day in total,
 * per token per day, and the period's totals. Rows outside `days` are ignored.
 *
 * @example summarizeUsage(await store.listDailyUsage(accountId, days[0]), days)
 */
export function summarizeUsage(rows: DailyUsage[], days: string[]): UsageSummary {
  const index = new Map(days.map((day, i) => [day, i]));
  const daily = days.map(zero);
  const total = zero();
  const perToken = new Map<string, { daily: UsageCounts[]; total: UsageCounts }>();
  for (const row of rows) {
    const at = index.get(row.day);
    if (at === undefined) continue;
    let token = perToken.get(row.userTokenId);
    if (!token) perToken.set(row.userTokenId, (token = { daily: days.map(zero), total: zero() }));
    add(daily[at], row);
    add(total, row);
    add(token.daily[at], row);
    add(token.total, row);
  }
  return { days, daily, total, perToken };
}
