import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg, release, totalmem } from 'node:os';

/** What the figures were measured on. */
export interface MachineInfo {
  cpu: string;
  cores: number;
  memoryGiB: number;
  /** 1, 5 and 15-minute load averages when the run started. */
  loadAverage: number[];
  node: string;
  kernel: string;
}

/**
 * Reads the CPU model (with family, model and vector extensions, since VMs often say only
 * "AMD EPYC"), and the extensions int8 arithmetic uses (VNNI, AMX) when it has them.
 */
export function describeMachine(): MachineInfo {
  let cpu = 'unknown CPU';
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const field = (name: string) => new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm').exec(info)?.[1]?.trim();
    const flags = new Set((field('flags') ?? '').split(/\s+/));
    const vector = ['avx512f', 'avx2'].find((flag) => flags.has(flag));
    const int8 = ['avx512_vnni', 'avx_vnni', 'amx_int8'].filter((flag) => flags.has(flag));
    cpu = `${field('model name') ?? 'unknown'} (family ${field('cpu family')}, model ${field('model')}${[vector, ...int8].filter(Boolean).map((f) => `, ${f}`).join('')})`;
  } catch {
    // not Linux: the model name stays unknown
  }
  return {
    cpu,
    cores: availableParallelism(),
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
    node: process.version,
    kernel: release(),
  };
}
