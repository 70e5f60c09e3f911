import { describe, expect, it } from 'vitest';
import { MAX_DEFAULT_SESSIONS, threadDefaults } from '../../src/threads/thread-defaults.js';

describe('the thread defaults, from the core count', () => {
  it('keep on 2 cores what every benchmark ran: one 2-thread session, one finish thread, two HEIC threads', () => {
    expect(threadDefaults(2)).toEqual({ inferenceSessions: 1, inferenceThreads: 2, finishThreads: 1, heicThreads: 2 });
  });

  it('give one core one thread of each, and still two HEIC threads', () => {
    expect(threadDefaults(1)).toEqual({ inferenceSessions: 1, inferenceThreads: 1, finishThreads: 1, heicThreads: 2 });
  });

  it('spread 4 and 16 cores over 2-thread sessions and half as many finish threads', () => {
    expect(threadDefaults(4)).toEqual({ inferenceSessions: 2, inferenceThreads: 2, finishThreads: 2, heicThreads: 2 });
    expect(threadDefaults(16)).toEqual({ inferenceSessions: 8, inferenceThreads: 2, finishThreads: 8, heicThreads: 8 });
  });

  it('stop adding sessions at the cap and give more cores to each', () => {
    expect(threadDefaults(64)).toMatchObject({ inferenceSessions: MAX_DEFAULT_SESSIONS, inferenceThreads: 64 / MAX_DEFAULT_SESSIONS, finishThreads: 32 });
    expect(threadDefaults(3)).toMatchObject({ inferenceSessions: 1, inferenceThreads: 3 });
  });

  it('never ask for more model threads than there are cores', () => {
    for (let cores = 1; cores <= 100; cores++) {
      const { inferenceSessions, inferenceThreads } = threadDefaults(cores);
      expect(inferenceSessions * inferenceThreads, `${cores} cores`).toBeLessThanOrEqual(cores);
      expect(inferenceSessions * inferenceThreads, `${cores} cores`).toBeGreaterThan(cores / 2);
    }
  });

  it('keep one session with every core where the model may run on a GPU', () => {
    expect(threadDefaults(16, { gpu: true })).toEqual({ inferenceSessions: 1, inferenceThreads: 16, finishThreads: 8, heicThreads: 8 });
    expect(threadDefaults(2, { gpu: true })).toEqual(threadDefaults(2));
  });
});
