import { describe, expect, it } from 'vitest';
import { MAX_DEFAULT_SESSIONS, modelThreads, threadDefaults } from '../../src/threads/thread-defaults.cjs';

describe('the thread defaults, from the core count', () => {
  it('keep on 2 cores what every benchmark ran: one 2-thread session, one finish thread, two HEIC threads, libuv\'s 4', () => {
    expect(threadDefaults(2)).toEqual({ inferenceSessions: 1, inferenceThreads: 2, finishThreads: 1, heicThreads: 2, libuvThreads: 4 });
  });

  it('give one core one thread of each, and still two HEIC threads', () => {
    expect(threadDefaults(1)).toEqual({ inferenceSessions: 1, inferenceThreads: 1, finishThreads: 1, heicThreads: 2, libuvThreads: 4 });
  });

  it('spread 4 and 16 cores over 2-thread sessions and half as many finish threads', () => {
    expect(threadDefaults(4)).toEqual({ inferenceSessions: 2, inferenceThreads: 2, finishThreads: 2, heicThreads: 2, libuvThreads: 4 });
    expect(threadDefaults(16)).toEqual({ inferenceSessions: 8, inferenceThreads: 2, finishThreads: 8, heicThreads: 8, libuvThreads: 16 });
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
    expect(threadDefaults(16, { gpu: true })).toEqual({ inferenceSessions: 1, inferenceThreads: 16, finishThreads: 8, heicThreads: 8, libuvThreads: 16 });
    expect(threadDefaults(2, { gpu: true })).toEqual(threadDefaults(2));
  });
});

describe('the model threads, from the cores and the provider chosen', () => {
  const never = () => {
    throw new Error('the host was looked at for a provider that does not need it');
  };

  it('keep the CPU defaults on `cpu`, even where the host has a GPU, without looking at the host', () => {
    expect(modelThreads(16, { provider: 'cpu' }, never)).toEqual({ sessions: 8, threads: 2 });
    expect(modelThreads(2, { provider: 'cpu' }, never)).toEqual({ sessions: 1, threads: 2 });
  });

  it('give a named GPU provider one session of every core, without looking at the host', () => {
    expect(modelThreads(16, { provider: 'webgpu' }, never)).toEqual({ sessions: 1, threads: 16 });
    expect(modelThreads(16, { provider: 'cuda' }, never)).toEqual({ sessions: 1, threads: 16 });
  });

  it('follow the host on `auto`', () => {
    expect(modelThreads(16, { provider: 'auto' }, () => true)).toEqual({ sessions: 1, threads: 16 });
    expect(modelThreads(16, { provider: 'auto' }, () => false)).toEqual({ sessions: 8, threads: 2 });
  });

  it('share the cores among the sessions given, and keep threads given', () => {
    expect(modelThreads(16, { provider: 'cpu', sessions: 4 }, never)).toEqual({ sessions: 4, threads: 4 });
    expect(modelThreads(16, { provider: 'webgpu', sessions: 3 }, never)).toEqual({ sessions: 3, threads: 5 });
    expect(modelThreads(2, { provider: 'cpu', sessions: 4 }, never)).toEqual({ sessions: 4, threads: 1 });
    expect(modelThreads(16, { provider: 'auto', threads: 3 }, () => true)).toEqual({ sessions: 1, threads: 3 });
    expect(modelThreads(16, { provider: 'cpu', sessions: 2, threads: 1 }, never)).toEqual({ sessions: 2, threads: 1 });
  });
});
