import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/**
 * The nice value of a thread that decodes a large photo: the lowest priority, so that the
 * kernel runs it only while the model's threads (and the small photos' work) do not want
 * the cores. On two cores the model's two threads wait for each other at every layer, and
 * a second of decoding beside a pass delays the pass about as much (docs/reliability.md,
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
    const link = readlinkSync('/proc/thread-self');
    setPriority(Number(link.slice(link.lastIndexOf('/') + 1)), nice);
    return true;
  } catch {
    return false;
  }
}
