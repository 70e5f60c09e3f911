import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * ONNX Runtime 1.30 writes files of its telemetry client with the first session a process
 * creates (an empty `mat-debug-<pid>.log` and a `.ses` in the temporary directory, a device
 * identifier and an event cache under `~/.cache/Microsoft/`), unless ORT_DISABLE_TELEMETRY is
 * set (`src/model/onnx-runtime-telemetry.ts`). A child process with that variable unset, and a
 * temporary directory and home of its own (so that other processes' files do not count),
 * creates and runs sessions the ways Cutout does; neither directory may gain any of them.
 */
describe("ONNX Runtime's files", () => {
  it('a process that creates and runs model sessions leaves none in the temporary directory or the home', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cutout-ort-files-'));
    try {
      const [temp, home, work] = ['tmp', 'home', 'work'].map((name) => join(dir, name));
      for (const folder of [temp, home, work]) await mkdir(folder);
      const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: temp, HOME: home };
      delete env.ORT_DISABLE_TELEMETRY;
      const child = new URL('./helpers/model-sessions-child.ts', import.meta.url);
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', child.pathname, work], { env });
      const pid = stdout.trim().split('\n').at(-1);
      expect(pid).toMatch(/^\d+$/);
      // tsx keeps its compile cache in the temporary directory: only ONNX Runtime's names count.
      const left = (await readdir(temp)).filter((name) => /mat-debug|\.ses$|onnxruntime/i.test(name));
      expect(left).toEqual([]);
      expect(existsSync(join(tmpdir(), `mat-debug-${pid}.log`))).toBe(false);
      expect(await readdir(home)).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
