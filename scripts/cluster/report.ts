import { percentile } from '../bench/stats.js';
import type { Outcome } from './load.js';

/**
 * A stretch of the run: the requests answered (or failed) between `start` and `end` (ms on
 * the run's clock) count to it, so that a request in flight when a fault struck counts to
 * the fault's phase, whenever it was sent.
 */
export interface Phase {
  name: string;
  start: number;
  end: number;
}

/** How an outcome is shown in the table: the status, with its problem code when not 200, or the socket error. */
export const outcomeLabel = (o: Outcome) => (o.error ? `no answer (${o.error})` : o.status === 200 ? '200' : `${o.status} ${o.code ?? ''}`.trim());

/** The requests of each phase by outcome, as a Markdown table. */
export function phaseTable(outcomes: Outcome[], phases: Phase[]): string {
  const labels = [...new Set(outcomes.map(outcomeLabel))].sort((a, b) => (a === '200' ? -1 : b === '200' ? 1 : a.localeCompare(b)));
  const rows = phases.map((phase) => {
    const mine = outcomes.filter((o) => o.end >= phase.start && o.end < phase.end);
    return [phase.name, String(mine.length), ...labels.map((label) => String(mine.filter((o) => outcomeLabel(o) === label).length))];
  });
  const header = ['phase', 'requests', ...labels];
  return [header, header.map(() => '---'), ...rows].map((row) => `| ${row.join(' | ')} |`).join('\n');
}

/** p50 and p99 of samples, in ms. */
export function quantiles(samples: number[]): { p50: number; p99: number } {
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
}
