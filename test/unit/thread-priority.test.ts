import { execFile } from 'node:child_process';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Runs in a process of its own, because a thread's nice value cannot be raised again: lowers
 * the background threads, starts a refine thread with its own nice value, and reports each
 * thread's nice value as the kernel has it.
 */
const PROBE = `
import { readFileSync, readdirSync } from 'node:fs';
import { lowerBackgroundThreads, threadPoolIds } from ${JSON.stringify(join(ROOT, 'src/thread-priority.ts'))};
import { Refiner } from ${JSON.stringify(join(ROOT, 'src/pipeline/refine.ts'))};
// Field 19 of /proc/<pid>/task/<tid>/stat, counted after the name in brackets.
const niceOf = (id) => Number(readFileSync('/proc/self/task/' + id + '/stat', 'utf8').split(') ')[1].split(' ')[16]);
const threads = () => readdirSync('/proc/self/task').map(Number);
const lowered = await lowerBackgroundThreads(7);
const pool = await threadPoolIds(4);
const before = new Set(threads());
const refiner = new Refiner({ nice: 5 });
refiner.begin({ photo: new Uint8Array([1, 2, 3]), maxPixels: 100 }).cancel();
let refine = [];
for (let i = 0; i < 100 && refine.length === 0; i++) {
  await new Promise((resolve) => setTimeout(resolve, 50));
  refine = threads().filter((id) => !before.has(id) && niceOf(id) === 5);
}
await refiner.close();
console.log(JSON.stringify({ lowered, pool: pool.map((id) => niceOf(id)), poolIds: pool, main: niceOf(process.pid), refine: refine.length }));
`;

describe.skipIf(process.platform !== 'linux')('thread priority (Linux)', () => {
  it('lowers libuv\'s pool and the refine thread, and leaves the main thread alone', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cutout-nice-'));
    try {
      const script = join(dir, 'probe.mts');
      await writeFile(script, PROBE);
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, env: { ...process.env, UV_THREADPOOL_SIZE: '4' }, timeout: 60_000 }, (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out))),
      );
      const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as { lowered: number[]; pool: number[]; poolIds: number[]; main: number; refine: number };
      expect(report.poolIds).toHaveLength(4);
      expect(report.pool).toEqual([7, 7, 7, 7]);
      expect(report.lowered).toEqual(expect.arrayContaining(report.poolIds));
      expect(report.lowered).not.toContain(report.main);
      expect(report.main).toBe(0);
      expect(report.refine).toBe(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
