import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ModelService } from '../src/model/model-service.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { fakeSegmenter, uniformMask } from './helpers/fake-segmenter.js';
import { makePhoto } from './helpers/images.js';
import type { RawImage } from '../src/image/raw-image.js';
import type { Segmenter } from '../src/model/segmenter.js';

// The tests here share nothing but the photo (each has its own app, and its own user tokens
// where they share Redis), so they run at once: most of their time is waiting (a deadline,
// an app with Redis closing its jobs' worker).

let jpeg: Buffer;
beforeAll(async () => {
  jpeg = await makePhoto('jpeg', 64, 48);
});

/**
 * A stand-in for the model whose passes last until the test calls `release()` (and from then
 * on end at once): a pass that outlasts whatever the test waits for, however loaded the
 * machine, without the test sitting out a fixed delay after it. Counts its runs.
 */
function heldSegmenter(): Segmenter & { runs: number; release(): void } {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const segmenter = {
    size: 1024,
    runs: 0,
    release,
    async segment(pictures: readonly RawImage[]) {
      segmenter.runs++;
      await released;
      return pictures.map(() => uniformMask(1024, 255));
    },
    close: async () => {},
  };
  return segmenter;
}

const removal = (t: TestApp, token: string) =>
  t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: token }, payload: { image_base64: jpeg.toString('base64') } });

const redisUrl = process.env.REDIS_URL;
if (!redisUrl) console.error('[cutout tests] Redis rate-limit tests SKIPPED: REDIS_URL is not set (.ci/run sets it)');

describe.each([
  { store: 'memory', redisUrl: undefined, skip: false },
  { store: 'Redis', redisUrl, skip: !redisUrl },
])('rate limit per user token ($store)', { concurrent: true }, ({ redisUrl, skip }) => {
  it.skipIf(skip)('answers 429 rate_limited with Retry-After and RateLimit-* past the limit, per user token', async () => {
    const model = ModelService.ofSegmenter(fakeSegmenter());
    const t = await startTestApp({ rateLimit: 2, redisUrl }, { model });
    try {
      const first = await t.managedToken();
      // A second managed token of the same user token shares the count.
      const sameUser = await t.managedToken();
      const a = await removal(t, first);
      expect(a.statusCode).toBe(200);
      expect(a.headers['ratelimit-limit']).toBe('2');
      expect(a.headers['ratelimit-remaining']).toBe('1');
      // Seconds until the minute's window starts again: within it, and counting down.
      const reset = Number(a.headers['ratelimit-reset']);
      expect(Number.isInteger(reset) && reset >= 1 && reset <= 60, `RateLimit-Reset ${a.headers['ratelimit-reset']}`).toBe(true);
      expect((await removal(t, sameUser)).statusCode).toBe(200);
      const refused = await removal(t, first);
      expect(refused.statusCode).toBe(429);
      expect(refused.json().code).toBe('rate_limited');
      expect(refused.headers['content-type']).toMatch(/problem\+json/);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.headers['ratelimit-remaining']).toBe('0');
      const resetWhenRefused = Number(refused.headers['ratelimit-reset']);
      expect(resetWhenRefused).toBeGreaterThanOrEqual(1);
      expect(resetWhenRefused).toBeLessThanOrEqual(reset);
      expect(Math.abs(Number(refused.headers['retry-after']) - resetWhenRefused)).toBeLessThanOrEqual(1);

      const { tokenId } = await t.tokens.createUserToken('another-user');
      const other = (await t.tokens.exchange(tokenId)).managedToken;
      expect((await removal(t, other)).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe.skipIf(!redisUrl)('rate limit shared through Redis', { concurrent: true }, () => {
  it('two processes on one store count one user token together', async () => {
    const model = ModelService.ofSegmenter(fakeSegmenter());
    const a = await startTestApp({ rateLimit: 3, redisUrl }, { model });
    const b = await startTestApp({ rateLimit: 3, redisUrl, dataDir: a.config.dataDir }, { model });
    try {
      const { tokenId } = await a.tokens.createUserToken('shared');
      const managed = (await a.tokens.exchange(tokenId)).managedToken;
      expect((await removal(a, managed)).statusCode).toBe(200);
      expect((await removal(b, managed)).statusCode).toBe(200);
      expect((await removal(a, managed)).statusCode).toBe(200);
      // b's own memory has seen one request; only Redis knows this is the fourth.
      const refused = await removal(b, managed);
      expect(refused.statusCode).toBe(429);
      expect(refused.json().code).toBe('rate_limited');
    } finally {
      // At once: closing an app with Redis waits for its jobs' BullMQ worker to let go.
      await Promise.all([b.close(), a.close()]);
    }
  });
});

describe('deadline and dropped work', { concurrent: true }, () => {
  it('a request past its deadline gets 504 deadline_exceeded, and its queued work never runs', async () => {
    // A pass that lasts until the answers are checked, past the deadline, which is long enough
    // for a loaded machine to bring the first image to the model and the second to the queue.
    const segmenter = heldSegmenter();
    const t = await startTestApp({ requestTimeoutMs: 5000, inferenceConcurrency: 1 }, { model: ModelService.ofSegmenter(segmenter) });
    try {
      const token = await t.managedToken();
      // Promise.resolve sends it now: inject sends a request once it is awaited.
      const first = Promise.resolve(removal(t, token));
      await vi.waitFor(() => expect(t.app.queue.running).toBe(1), { timeout: 30_000, interval: 10 });
      const second = Promise.resolve(removal(t, token));
      await vi.waitFor(() => expect(t.app.queue.queued).toBe(1), { timeout: 30_000, interval: 10 });
      const [running, queued] = await Promise.all([first, second]);
      for (const response of [running, queued]) {
        expect(response.statusCode).toBe(504);
        expect(response.json().code).toBe('deadline_exceeded');
      }
      // Answered at the deadline, not once the model was done: its one pass is still running.
      expect(t.app.queue.passes).toBe(0);
      expect(t.app.queue.running).toBe(1);
      // The first was already in the model (cannot be interrupted); the queued one was
      // dropped. Had it stayed, the queue would hand it the slot at once when the first pass
      // ends (running stays 1), so the queue is seen empty only after a second pass.
      segmenter.release();
      await vi.waitFor(() => expect(t.app.queue.running).toBe(0), { timeout: 30_000, interval: 20 });
      expect(segmenter.runs).toBe(1);
      expect(t.app.queue.passes).toBe(1);
      expect(t.app.queue.queued).toBe(0);
    } finally {
      segmenter.release(); // a failed check must not leave the pass holding the close
      await t.close();
    }
  });

  it('a client that disconnects has its queued work dropped', async () => {
    const segmenter = heldSegmenter();
    const t = await startTestApp({ inferenceConcurrency: 1 }, { model: ModelService.ofSegmenter(segmenter) });
    try {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const url = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/api/v1/background/remove/base64`;
      const token = await t.managedToken();
      const send = (signal?: AbortSignal) =>
        fetch(url, { method: 'POST', signal, headers: { authorization: token, 'content-type': 'application/json' }, body: JSON.stringify({ image_base64: jpeg.toString('base64') }) });
      const first = send();
      while (t.app.queue.running === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      const controller = new AbortController();
      const second = send(controller.signal).catch((error: Error) => error.name);
      while (t.app.queue.queued === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      controller.abort();
      expect(await second).toBe('AbortError');
      // The server sees the closed connection a moment later: dropped before the first pass ends.
      await vi.waitFor(() => expect(t.app.queue.queued === 0 || t.app.queue.passes > 0).toBe(true), { timeout: 30_000, interval: 10 });
      expect([t.app.queue.queued, t.app.queue.passes]).toEqual([0, 0]);
      segmenter.release();
      expect((await first).status).toBe(200);
      await vi.waitFor(() => expect(t.app.queue.running).toBe(0), { timeout: 30_000, interval: 20 });
      expect(segmenter.runs).toBe(1);
    } finally {
      segmenter.release();
      await t.close();
    }
  });
});
