import { readdirSync, readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/**
 * The nice value of every thread but the event loop's: the model's, the finish thread's,
 * libuv's and libvips' pools. On two cores these keep both busy under load, and a woken event
 * loop at the same priority waits its turn behind them at each of a request's steps (a
 * private `bg_image_url`, refused with no pixel work, took 17–28 ms at the median in a hostile
 * soak, where it takes 3 ms on an idle server). A little lower, they still share the cores
 * among themselves as before, and the event loop, which needs little, runs when it wakes.
 */
export const WORKER_NICE = 4;

/**
 * The nice value of a thread that decodes a large photo: the lowest priority, so that the
 * kernel runs it only while the model's threads (and the small photos' work) do not want
 * the cores. On two cores the model's two threads wait for each other at every layer, and
 * a second of decoding beside a pass delays the pass about as much (docs/internals/memory.md,
 * the hostile soak).
 */
export const LARGE_WORK_NICE = 19;

/**
 * Lowers the calling thread's priority to `nice` (Linux: `/proc/thread-self` names the
 * thread, and `setPriority` takes a thread's id). One way only: an ordinary user may raise a
 * nice value, not lower it again, so a thread lowered is ended after its work. Returns false
 * where the system has no such thread id or refuses; the work then runs at the default.
 */
export function lowerThisThread(nice: number): boolean {
  try {
    lowerThread(thisThreadId(), nice);
    return true;
  } catch {
    return false;
  }
}

/**
 * Gives the calling thread back the priority of `nice` (a lower nice value than its own),
 * where the process may: as root with CAP_SYS_NICE, or with an RLIMIT_NICE that allows it
 * (`ulimit -e`, Docker's `--ulimit nice=`). Returns false where it may not (an ordinary user
 * by default) or the system has no such thread id; the thread then keeps its nice value.
 */
export function raiseThisThread(nice: number): boolean {
  try {
    const id = thisThreadId();
    if (getPriority(id) > nice) setPriority(id, nice);
    return true;
  } catch {
    return false;
  }
}

let eventLoopFirst = false;

/**
 * For the server's main thread: every other thread of the process, now and from now on, runs
 * at {@link WORKER_NICE}. Threads started later from a lowered one inherit its nice value;
 * those the main thread starts (worker threads, and whatever they start before their first
 * line runs) are lowered by {@link threadsStarted}. Off Linux, nothing changes.
 */
export function putEventLoopFirst(): void {
  eventLoopFirst = true;
  lowerOtherThreads(WORKER_NICE);
}

/** After this thread has started threads: lowers them, once {@link putEventLoopFirst} was called here. */
export function threadsStarted(): void {
  if (eventLoopFirst) lowerOtherThreads(WORKER_NICE);
}

/** Lowers every other thread of the process to `nice`, leaving those lower already. */
function lowerOtherThreads(nice: number): void {
  try {
    const self = thisThreadId();
    for (const task of readdirSync('/proc/self/task')) {
      try {
        if (Number(task) !== self) lowerThread(Number(task), nice);
      } catch {
        // ended meanwhile
      }
    }
  } catch {
    // no /proc: not Linux
  }
}

const thisThreadId = () => {
  const link = readlinkSync('/proc/thread-self');
  return Number(link.slice(link.lastIndexOf('/') + 1));
};

/** Raises a thread's nice value to `nice` unless it is that high already. Throws if it has ended or may not be changed. */
function lowerThread(id: number, nice: number): void {
  if (getPriority(id) < nice) setPriority(id, nice);
}
