import { readFile } from 'node:fs/promises';

/**
 * A process's resident memory now (`VmRSS`) or at its peak (`VmHWM`, which writing 5 to its
 * `/proc/<pid>/clear_refs` resets to the current RSS), in MiB, from `/proc/<pid>/status`.
 *
 * @example await memoryMiB(server.pid, 'VmHWM') // 1173
 */
export async function memoryMiB(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1];
  if (kib === undefined) throw new Error(`/proc/${pid}/status has no ${field}`);
  return Number(kib) / 1024;
}
