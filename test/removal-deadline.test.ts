import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CutoutError } from '../src/errors.js';
import { ModelService } from '../src/model/model-service.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { fakeSegmenter } from './helpers/fake-segmenter.js';
import { makePhoto } from './helpers/images.js';

/**
 * A removal's deadline travels in its request (`RemovalRequest.deadline`), not beside its
 * signal: a job item's removal, whose signal is composed (`AbortSignal.any`) of the runner's
 * and its own deadline's, waits for memory only while it could still finish, as a request does.
 */

const MB = 2 ** 20;

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !condition(); waited += 20) {
    if (waited > 5000) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("a removal's deadline", () => {
  let t: TestApp;
  let photo: Buffer;
  beforeAll(async () => {
    // A removal's work takes about 2 s here; one photo's estimate fills most of the budget.
    t = await startTestApp({ memoryBudget: 16 * MB, rateLimit: 0, requestTimeoutMs: 3000 }, { model: ModelService.ofSegmenter(fakeSegmenter(2000)) });
    photo = await makePhoto('jpeg', 640, 480);
    await t.app.removals.remove(photo, new AbortController().signal); // the pace is learned
  });
  afterAll(async () => t?.close());

  it('refuses a job-like removal (composed signal, deadline in its request) with queue_full once it could not finish in time, without waiting for the memory', async () => {
    const holding = t.app.removals.remove(photo, new AbortController().signal);
    await until(() => t.app.removals.memory.reserved > 0, 'the first removal holds the memory');
    const signal = AbortSignal.any([new AbortController().signal, new AbortController().signal]);
    const started = performance.now();
    const error = await t.app.removals.remove(photo, signal, { deadline: performance.now() + 3000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CutoutError);
    expect((error as CutoutError).code).toBe('queue_full');
    expect((error as CutoutError).message).toMatch(/deadline/);
    expect(performance.now() - started).toBeLessThan(1500);
    await holding;
  });

  it('lets a removal without a deadline wait for the memory, however long', async () => {
    const holding = t.app.removals.remove(photo, new AbortController().signal);
    await until(() => t.app.removals.memory.reserved > 0, 'the first removal holds the memory');
    const result = await t.app.removals.remove(photo, new AbortController().signal);
    expect(result.width).toBe(640);
    await holding;
    expect(t.app.removals.memory.reserved).toBe(0);
  });
});
