import { relative } from 'node:path';
import cliProgress from 'cli-progress';
import type { RemovalJob } from './removal-jobs.js';

/** How one job ended. */
export type JobOutcome =
  | { kind: 'written'; job: RemovalJob; width?: number; height?: number; ms: number }
  | { kind: 'skipped'; job: RemovalJob }
  | { kind: 'failed'; job: RemovalJob; code: string; status: number; detail: string };

/** Where `cutout remove` tells the person at the terminal, or the log, how the run goes. */
export interface RemovalProgress {
  /** Called once, before the first image is sent, with the jobs that will be sent and those skipped. */
  start(toSend: number, skipped: RemovalJob[]): void;
  finished(outcome: JobOutcome): void;
  /** One retry of some image (429, 503, …): counted for the summary. */
  retried(): void;
  /** Ends the display and prints the summary; `interrupted` counts the images never finished. */
  stop(interrupted: number): void;
}

export interface ProgressStreams {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

/**
 * A bar with done/total, rate and time left on a terminal (cli-progress, on stderr), or one
 * line per image on stdout otherwise (a log, a CI job, a pipe); then the same summary.
 */
export function createRemovalProgress(streams: ProgressStreams, now: () => number = () => performance.now()): RemovalProgress {
  const onTerminal = streams.stderr.isTTY === true;
  const print = (line: string) => streams.stdout.write(`${line}\n`);
  const failures: Extract<JobOutcome, { kind: 'failed' }>[] = [];
  let written = 0;
  let skipped = 0;
  let retries = 0;
  let started = now();
  let total = 0;
  const rate = () => (written / Math.max(0.001, (now() - started) / 1000)).toFixed(2);
  /** Time left at the pace so far (images finished per second, whatever the concurrency); '?' before the first. */
  const timeLeft = () => {
    const finished = written + failures.length;
    if (finished === 0) return '?';
    return formatDuration(((total - finished) * (now() - started)) / finished / 1000);
  };
  const bar = onTerminal
    ? new cliProgress.SingleBar(
        {
          stream: streams.stderr,
          format: '{bar} {value}/{total} | {rate} images/s | {left} left | {failed} failed',
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;

  return {
    start(toSend, skippedJobs) {
      started = now();
      total = toSend;
      skipped = skippedJobs.length;
      if (bar) {
        if (skipped) print(`Skipping ${skipped} image${skipped === 1 ? '' : 's'} whose result exists already.`);
        bar.start(toSend, 0, { rate: '0.00', left: '?', failed: 0 });
      } else {
        for (const job of skippedJobs) print(`skipped  ${job.label} (${shortPath(job.output)} exists)`);
      }
    },
    finished(outcome) {
      if (outcome.kind === 'written') written++;
      if (outcome.kind === 'failed') failures.push(outcome);
      if (bar) {
        bar.increment(1, { rate: rate(), left: timeLeft(), failed: failures.length });
      } else if (outcome.kind === 'written') {
        print(`written  ${outcome.job.label} -> ${shortPath(outcome.job.output)} (${outcome.width === undefined ? '' : `${outcome.width}x${outcome.height}, `}${(outcome.ms / 1000).toFixed(1)} s)`);
      } else if (outcome.kind === 'failed') {
        print(`failed   ${outcome.job.label}: ${describeFailure(outcome)}`);
      }
    },
    retried() {
      retries++;
    },
    stop(interrupted) {
      bar?.stop();
      if (bar) for (const failure of failures) print(`failed   ${failure.job.label}: ${describeFailure(failure)}`);
      const seconds = (now() - started) / 1000;
      const parts = [`${written} written`, `${skipped} skipped`, `${failures.length} failed`];
      if (interrupted) parts.push(`${interrupted} not done (interrupted)`);
      print(`${parts.join(', ')} in ${seconds.toFixed(1)} s: ${rate()} images/s${retries ? `, after ${retries} retr${retries === 1 ? 'y' : 'ies'}` : ''}.`);
      if (failures.length) {
        const byCode = new Map<string, number>();
        for (const failure of failures) byCode.set(failure.code, (byCode.get(failure.code) ?? 0) + 1);
        print(`Failed: ${[...byCode].map(([code, n]) => `${n} ${code}`).join(', ')}.`);
      }
    },
  };
}

function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

function describeFailure(failure: Extract<JobOutcome, { kind: 'failed' }>): string {
  return `${failure.code}${failure.status ? ` (${failure.status})` : ''}: ${failure.detail}`;
}

/** The output path as typed from here when it lies below, else as it is. */
function shortPath(path: string): string {
  const short = relative(process.cwd(), path);
  return short.startsWith('..') ? path : short;
}
