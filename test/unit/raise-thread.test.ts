import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { describe, expect, it } from 'vitest';
import { lowerThisThread, raiseThisThread } from '../../src/threads/thread-priority.js';

const thisThread = () => Number(readlinkSync('/proc/thread-self').split('/').at(-1));
const mayRaise = process.platform === 'linux' && process.getuid?.() === 0;

describe('raiseThisThread', () => {
  it.runIf(mayRaise)('gives a thread lowered for large work its priority back, as root', () => {
    const id = thisThread();
    const before = getPriority(id);
    try {
      expect(lowerThisThread(19)).toBe(true);
      expect(getPriority(id)).toBe(19);
      expect(raiseThisThread(before)).toBe(true);
      expect(getPriority(id)).toBe(before);
    } finally {
      setPriority(id, before);
    }
  });

  it.runIf(process.platform === 'linux' && !mayRaise)('says so where the process may not raise a priority, and leaves it', () => {
    const id = thisThread();
    const before = getPriority(id);
    expect(raiseThisThread(before - 1)).toBe(false);
    expect(getPriority(id)).toBe(before);
  });

  it.runIf(process.platform === 'linux')('leaves a thread already at that priority or higher as it is', () => {
    const id = thisThread();
    const before = getPriority(id);
    expect(raiseThisThread(before + 1)).toBe(true);
    expect(getPriority(id)).toBe(before);
  });
});
