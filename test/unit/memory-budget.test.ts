import { describe, expect, it, vi } from 'vitest';
import { CutoutError } from '../../src/errors.js';
import { MemoryBudget, Reservations } from '../../src/removal/memory-budget.js';

const settled = async (promise: Promise<unknown>) => {
  let done = false;
  void promise.then(() => (done = true), () => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe('MemoryBudget', () => {
  it('reserves at once what fits, makes the rest wait, and lets it in when memory is released', async () => {
    const budget = new MemoryBudget(100, { maxWaiting: 4, retryAfterSeconds: () => 7 });
    const a = await budget.reserve(60);
    const b = budget.reserve(60);
    expect(await settled(b)).toBe(false);
    expect(budget.waiting).toBe(1);
    a.release();
    a.release(); // a second release gives nothing back twice
    const held = await b;
    expect(budget.reserved).toBe(60);
    held.release();
    expect(budget.reserved).toBe(0);
  });

  it('lets a small request past a waiting large one when it fits now', async () => {
    const budget = new MemoryBudget(100, { maxWaiting: 4, retryAfterSeconds: () => 7 });
    const a = await budget.reserve(50);
    const large = budget.reserve(80);
    const small = budget.reserve(30);
    expect(await settled(small)).toBe(true);
    expect(await settled(large)).toBe(false);
    a.release();
    (await small).release();
    (await large).release();
    expect(budget.reserved).toBe(0);
  });

  it('refuses at once, 503 over_memory_budget with Retry-After, what could never fit', async () => {
    const budget = new MemoryBudget(100, { maxWaiting: 4, retryAfterSeconds: () => 7 });
    const error = await budget.reserve(101).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CutoutError);
    expect((error as CutoutError).code).toBe('over_memory_budget');
    expect((error as CutoutError).status).toBe(503);
    expect(Number((error as CutoutError).headers['retry-after'])).toBeGreaterThan(0);
    expect(budget.reserved).toBe(0);
  });

  it('refuses queue_full when as many as allowed already wait, and drops a waiter whose signal aborts', async () => {
    const budget = new MemoryBudget(100, { maxWaiting: 1, retryAfterSeconds: () => 7 });
    const a = await budget.reserve(100);
    const controller = new AbortController();
    const waiting = budget.reserve(10, controller.signal);
    waiting.catch(() => {});
    const full = (await budget.reserve(10).catch((e: unknown) => e)) as CutoutError;
    expect(full.code).toBe('queue_full');
    // The one rule's Retry-After: the one the budget was given (the inference queue's).
    expect(full.headers['retry-after']).toBe('7');
    expect(() => budget.assertRoomToWait()).toThrow(full.message);
    controller.abort(new Error('gone'));
    await expect(waiting).rejects.toThrow('gone');
    expect(budget.waiting).toBe(0);
    a.release();
    expect(budget.reserved).toBe(0);
  });
});

describe('MemoryBudget with patience', () => {
  const queueFull = (error: unknown) => {
    expect(error).toBeInstanceOf(CutoutError);
    expect((error as CutoutError).code).toBe('queue_full');
    expect((error as CutoutError).status).toBe(503);
    return Number((error as CutoutError).headers['retry-after']);
  };

  it('lets in what fits now however late it is, and refuses at once what does not fit once its time to wait has passed', async () => {
    const budget = new MemoryBudget(100, { maxWaiting: 4, retryAfterSeconds: () => 7 });
    const late = { giveUpAt: performance.now() - 1, retryAfterSeconds: 7 };
    const a = await budget.reserve(60, undefined, late);
    expect(queueFull(await budget.reserve(60, undefined, late).catch((e: unknown) => e))).toBe(7);
    expect(budget.waiting).toBe(0);
    a.release();
  });

  it('stops waiting at giveUpAt with queue_full and its Retry-After, leaving the queue; one let in earlier keeps its memory', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const budget = new MemoryBudget(100, { maxWaiting: 4, retryAfterSeconds: () => 7 });
      const a = await budget.reserve(100);
      const patient = budget.reserve(50, undefined, { giveUpAt: performance.now() + 5_000, retryAfterSeconds: 3 });
      const impatient = budget.reserve(50, undefined, { giveUpAt: performance.now() + 1_000, retryAfterSeconds: 2 });
      const refused = impatient.catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(999);
      expect(budget.waiting).toBe(2);
      await vi.advanceTimersByTimeAsync(1);
      const error = await refused;
      expect(queueFull(error)).toBe(2);
      expect((error as CutoutError).message).toMatch(/waited 1\.0 s/);
      expect(budget.waiting).toBe(1);
      a.release();
      const held = await patient;
      await vi.advanceTimersByTimeAsync(10_000); // its timer was cleared: nothing rejects it later
      expect(budget.reserved).toBe(50);
      held.release();
      expect(budget.reserved).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('Reservations', () => {
  it('releases every reservation at once, and one added after the release immediately', async () => {
    const budget = new MemoryBudget(100, { maxWaiting: 4, retryAfterSeconds: () => 7 });
    const holds = new Reservations();
    holds.add(await budget.reserve(30));
    holds.add(await budget.reserve(20));
    expect(budget.reserved).toBe(50);
    holds.release();
    expect(budget.reserved).toBe(0);
    // A background's reservation that arrives after its removal failed is not kept.
    holds.add(await budget.reserve(40));
    expect(budget.reserved).toBe(0);
    holds.release();
    expect(budget.reserved).toBe(0);
  });
});
