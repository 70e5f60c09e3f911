import { readFileSync, writeFileSync } from 'node:fs';

/** Resident memory of a process, from /proc/<pid>/status (Linux), in bytes. */
export interface ProcessMemory {
  /** VmRSS: resident now. */
  rss: number;
  /** VmHWM: the peak resident size since start, or since {@link resetPeakRss}. */
  peak: number;
}

/** Reads VmRSS and VmHWM of a process; undefined when it is gone or /proc is not there. */
export function readProcessMemory(pid: number): ProcessMemory | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
    return { rss: kb('VmRSS'), peak: kb('VmHWM') };
  } catch {
    return undefined;
  }
}

/**
 * A process's resident memory now (`VmRSS`) or at its peak (`VmHWM`), in MiB; throws when
 * the process is gone, for scripts that print it as they go.
 *
 * @example await memoryMiB(server.pid, 'VmHWM') // 1173
 */
export async function memoryMiB(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const memory = readProcessMemory(pid);
  if (!memory) throw new Error(`process ${pid} has no /proc/${pid}/status (it has exited)`);
  return (field === 'VmRSS' ? memory.rss : memory.peak) / 2 ** 20;
}

/**
 * Resets the process's VmHWM to its current RSS (writing 5 to /proc/<pid>/clear_refs, Linux
 * 4.0+), so the peak of one load phase can be read on its own. False when not allowed.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/**
 * Samples a process's RSS at an interval while a load phase runs: a second opinion on the
 * kernel's VmHWM, and the only one where clear_refs is refused.
 */
export class RssSampler {
  #max = 0;
  #samples = 0;
  readonly #timer: NodeJS.Timeout;

  constructor(pid: number, intervalMs = 250) {
    const sample = () => {
      const memory = readProcessMemory(pid);
      if (!memory) return;
      this.#max = Math.max(this.#max, memory.rss);
      this.#samples++;
    };
    sample();
    this.#timer = setInterval(sample, intervalMs);
  }

  /** Stops sampling; returns the largest RSS seen, in bytes, and how many samples were taken. */
  stop(): { maxRss: number; samples: number } {
    clearInterval(this.#timer);
    return { maxRss: this.#max, samples: this.#samples };
  }
}
