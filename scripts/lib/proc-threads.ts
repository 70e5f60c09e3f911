import { readdir, readFile } from 'node:fs/promises';
import { cpuTicksOfStat } from '../bench/cpu-account.js';

/**
 * Each live thread of a process (Linux): its id, name, nice value and CPU time so far (clock
 * ticks), from `/proc/<pid>/task/<tid>/stat` (the nice value is field 19, counted from the
 * state after the name).
 */
export async function threadsOf(pid: number | 'self'): Promise<{ id: number; name: string; nice: number; cpuTicks: number }[]> {
  const tasks = await readdir(`/proc/${pid}/task`);
  const threads = await Promise.all(
    tasks.map(async (task) => {
      const stat = await readFile(`/proc/${pid}/task/${task}/stat`, 'utf8').catch(() => '');
      if (!stat) return undefined; // ended while read
      return { id: Number(task), name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), nice: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]), cpuTicks: cpuTicksOfStat(stat) };
    }),
  );
  return threads.filter((thread) => thread !== undefined);
}
