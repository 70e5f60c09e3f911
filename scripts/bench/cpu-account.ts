import { readFileSync } from 'node:fs';

/** CPU time in clock ticks: the whole machine's busy time, and that of the processes watched. */
interface CpuReading {
  at: number;
  machineBusy: number;
  ours: number;
}

function machineBusyTicks(): number {
  // cpu  user nice system idle iowait irq softirq steal …
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = fields;
  return user + nice + system + irq + softirq + (steal ?? 0);
}

/** utime + stime, in clock ticks, of a process's or a thread's /proc `stat` line. */
export function cpuTicksOfStat(stat: string): number {
  // Fields after the name's closing parenthesis (the name may hold one): utime is the 12th, stime the 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

function processTicks(pid: number): number {
  try {
    return cpuTicksOfStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return 0;
  }
}

const TICKS_PER_SECOND = 100;

/**
 * Tells how much of the machine other people's processes took while a phase ran: busy CPU
 * time of the whole machine minus that of the benchmark's own processes (this one, the
 * server, the peer; threads included), in cores. On a shared 2-core machine this says which
 * figures were measured with the cores to themselves. Linux only; NaN elsewhere.
 */
export class CpuAccount {
  readonly #pids: Set<number>;

  constructor(pids: number[] = []) {
    this.#pids = new Set([process.pid, ...pids]);
  }

  /** Adds a process (the server or the peer, once started). */
  watch(pid: number): void {
    this.#pids.add(pid);
  }

  #read(): CpuReading | undefined {
    try {
      let ours = 0;
      for (const pid of this.#pids) ours += processTicks(pid);
      return { at: performance.now(), machineBusy: machineBusyTicks(), ours };
    } catch {
      return undefined;
    }
  }

  /** Runs `phase`; returns its value and the cores other processes used meanwhile, on average. */
  async measure<T>(phase: () => Promise<T>): Promise<{ value: T; foreignCores: number }> {
    const start = this.#read();
    const value = await phase();
    const end = this.#read();
    if (!start || !end) return { value, foreignCores: Number.NaN };
    const seconds = (end.at - start.at) / 1000;
    const foreign = end.machineBusy - start.machineBusy - (end.ours - start.ours);
    return { value, foreignCores: Math.max(0, foreign / TICKS_PER_SECOND / seconds) };
  }
}
