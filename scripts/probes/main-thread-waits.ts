/**
 * Watches a running server from outside, as a process of its own (a thread inside the server
 * would wait on the same locks), and prints each time the server's main thread has been in
 * uninterruptible sleep (D) for 20 ms: its kernel stack, and the name, id, nice value, state
 * and kernel stack of every other thread running or in D then, again at 50, 100 and 200 ms of
 * the same wait. A main thread in D waits for the kernel, mostly for a lock of the process's
 * memory map that another thread holds; the other thread's stack says which and why. Kernel
 * stacks need root (`/proc/<pid>/task/<tid>/stack`).
 *
 *   npx tsx scripts/probes/main-thread-waits.ts --pid <server pid> [--seconds 600]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { threadsOf } from '../lib/proc-threads.js';

const { values } = parseArgs({ options: { pid: { type: 'string' }, seconds: { type: 'string', default: '600' } } });
const pid = Number(values.pid);
if (!pid) throw new Error('--pid <server pid> is required');
const until = Date.now() + 1000 * Number(values.seconds);

/** A thread's kernel stack, innermost first, without offsets: `mprotect<…`. */
const stackOf = (tid: number) => {
  try {
    return readFileSync(`/proc/${pid}/task/${tid}/stack`, 'utf8')
      .split('\n')
      .slice(0, 6)
      .map((line) => line.replace(/^\[<\w+>\] /, '').replace(/\+0x.*$/, ''))
      .filter(Boolean)
      .join(' < ');
  } catch {
    return '?';
  }
};
const mainState = () => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1][0];

const REPORT_AT_MS = [20, 50, 100, 200];
let waitStart = 0;
let reported = 0;
console.log(`# watching ${pid}'s main thread for ${values.seconds} s`);
while (Date.now() < until) {
  let state: string;
  try {
    state = mainState();
  } catch {
    break; // the server has ended
  }
  const now = Date.now();
  if (state !== 'D') {
    waitStart = 0;
  } else {
    if (!waitStart) [waitStart, reported] = [now, 0];
    const waited = now - waitStart;
    if (reported < REPORT_AT_MS.length && waited >= REPORT_AT_MS[reported]) {
      while (reported < REPORT_AT_MS.length && waited >= REPORT_AT_MS[reported]) reported++;
      const others = (await threadsOf(pid)).filter((thread) => thread.id !== pid && (thread.state === 'R' || thread.state === 'D'));
      console.log(`${new Date(waitStart).toISOString()} main thread in D for ${waited} ms: ${stackOf(pid)}`);
      for (const thread of others) console.log(`  ${thread.name}/${thread.id} nice ${thread.nice} ${thread.state}: ${stackOf(thread.id) || '(user space)'}`);
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 5));
}
