import { describe, expect, it, vi } from 'vitest';
import { fullCollection, IdleCollector } from '../../src/threads/idle-collector.js';

describe('IdleCollector', () => {
  it('collects once the work has stopped for idleMs, not while any is under way', () => {
    vi.useFakeTimers();
    try {
      const collect = vi.fn();
      const collector = new IdleCollector({ idleMs: 1000, collect });
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

  it('collects after the current task, busy or not, once the work ended since the last collection held collectAfterBytes', () => {
    vi.useFakeTimers();
    try {
      const collect = vi.fn();
      const collector = new IdleCollector({ idleMs: 60_000, collectAfterBytes: 100, collect });
      for (let i = 0; i < 4; i++) collector.begin();
      collector.end(60);
      vi.advanceTimersByTime(1000);
      expect(collect).not.toHaveBeenCalled(); // 60 of 100, and work left
      collector.end(40);
      collector.begin(); // new work arriving in the same task does not put it off
      expect(collect).not.toHaveBeenCalled(); // not in the task that ended the work
      vi.advanceTimersByTime(0);
      expect(collect).toHaveBeenCalledTimes(1);
      collector.end(99); // counted from the collection: 99 of 100
      vi.advanceTimersByTime(1000);
      expect(collect).toHaveBeenCalledTimes(1);
      collector.end(1);
      collector.end(500); // one collection for both
      vi.advanceTimersByTime(0);
      expect(collect).toHaveBeenCalledTimes(2);
      vi.advanceTimersByTime(60_000); // all ended with that collection: none more once idle
      expect(collect).toHaveBeenCalledTimes(2);
      collector.begin();
      collector.end(1); // small work: collected once idle
      vi.advanceTimersByTime(59_999);
      expect(collect).toHaveBeenCalledTimes(2);
      vi.advanceTimersByTime(1);
      expect(collect).toHaveBeenCalledTimes(3);
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
