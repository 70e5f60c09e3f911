import { readdir, readFile } from 'node:fs/promises';
import { cpuTicksOfStat } from '../bench/cpu-account.js';

/** One thread as `threadsOf` reads it; `state` is the kernel's letter (R running, S sleeping, D waiting uninterruptibly, …). */
export interface ThreadInfo {
  id: number;
  name: string;
  state: string;
  nice: number;
  cpuTicks: number;
}

/**
 * Each live thread of a process (Linux): its id, name, state, nice value and CPU time so far
 * (clock ticks), from `/proc/<pid>/task/<tid>/stat` (the state is the field after the name,
 * the nice value 16 after the state).
 */
export async function threadsOf(pid: number | 'self'): Promise<ThreadInfo[]> {
  const tasks = await readdir(`/proc/${pid}/task`);
  const threads = await Promise.all(
    tasks.map(async (task) => {
      const stat = await readFile(`/proc/${pid}/task/${task}/stat`, 'utf8').catch(() => '');
      if (!stat) return undefined; // ended while read
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return { id: Number(task), name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), state: fields[0], nice: Number(fields[16]), cpuTicks: cpuTicksOfStat(stat) };
    }),
  );
  return threads.filter((thread) => thread !== undefined);
}
