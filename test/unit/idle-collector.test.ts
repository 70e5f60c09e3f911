import { describe, expect, it, vi } from 'vitest';
import { fullCollection, IdleCollector } from '../../src/threads/idle-collector.js';

describe('IdleCollector', () => {
  it('collects once the work has stopped for idleMs, not while any is under way', () => {
    vi.useFakeTimers();
    try {
      const collect = vi.fn();
      const collector = new IdleCollector(1000, collect);
      collector.begin();
      collector.begin();
      collector.end();
      vi.advanceTimersByTime(5000);
      expect(collect).not.toHaveBeenCalled(); // one still under way
      collector.end();
      vi.advanceTimersByTime(999);
      collector.begin(); // new work before the time: no collection
      vi.advanceTimersByTime(5000);
      expect(collect).not.toHaveBeenCalled();
      collector.end();
      vi.advanceTimersByTime(1000);
      expect(collect).toHaveBeenCalledTimes(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('runs V8\'s full collection: an object nothing holds is finalized after it', async () => {
    let finalized = false;
    const registry = new FinalizationRegistry(() => (finalized = true));
    (() => registry.register({ pixels: new Uint8Array(1024) }, 'image'))();
    fullCollection()();
    await vi.waitFor(() => expect(finalized).toBe(true), { timeout: 2000, interval: 10 });
  });
});
