import { readFile, rm } from 'node:fs/promises';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { WORKER_NICE } from '../src/threads/thread-priority.js';
import { makePhoto } from './helpers/images.js';
import { threadsOf } from '../scripts/lib/proc-threads.js';
import { exchangeOverHttp, freshDataDir, killLeftoverChildren, removeBackgroundOverHttp, startServer } from './processes/server-process.js';

// The event loop before the pixel work, on the real thing: `src/main.ts` as a child process.

const dataDirs: string[] = [];
afterAll(async () => {
  await killLeftoverChildren();
  await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe.runIf(process.platform === 'linux')('thread priorities', () => {
  it('a ready server runs its main thread at the default priority and every other one lower, those a removal starts too', { timeout: 180_000 }, async () => {
    const { dataDir, tokenId } = await freshDataDir('cutout-priority-');
    dataDirs.push(dataDir);
    const server = await startServer({ CUTOUT_DATA_DIR: dataDir });
    try {
      const pid = server.child.pid!;
      await server.waitForLog((line) => typeof line.msg === 'string' && line.msg.endsWith('loaded and warmed up; ready'));
      const managed = await exchangeOverHttp(server.origin, tokenId);
      // The finish thread and libvips' threads start with the first removal, an HEIC thread with the first HEIC.
      for (const photo of [await makePhoto('jpeg', 320, 240), await readFile(new URL('fixtures/heic/orientation-6-irot.heic', import.meta.url))]) {
        const answer = await removeBackgroundOverHttp(server.origin, managed, photo);
        expect(answer.status, answer.body.toString().slice(0, 300)).toBe(200);
      }
      const threads = await threadsOf(pid);
      expect(threads.find((thread) => thread.id === pid)?.nice).toBe(0);
      const others = threads.filter((thread) => thread.id !== pid);
      expect(others.length).toBeGreaterThan(5); // V8's, libuv's, the model's, the finish thread, libvips'
      expect(others.filter((thread) => thread.nice < WORKER_NICE)).toEqual([]);
      expect(others.some((thread) => thread.name === 'libvips worker')).toBe(true);
    } finally {
      await vi.waitFor(() => server.stop(), { timeout: 30_000 });
    }
  });
});
