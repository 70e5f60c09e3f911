import { readdir, readFile, readlink } from 'node:fs/promises';
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/**
 * Background threads give way to the model. On two cores the model's two threads want both,
 * and every millisecond another thread of the process runs beside a pass (a decode, a PNG
 * encode, the refinement of an earlier request) delays the pass by about as much: its
 * threads wait for each other at every layer. A higher nice value for the threads that do
 * that work lets the kernel run them when a model thread waits, and the pass under load
 * stays near the bare one (docs/benchmarks.md, "Background threads give way to the model").
 * Linux only; elsewhere these do nothing.
 */

/** `/proc/thread-self` links to `<pid>/task/<tid>`. */
const threadIdOf = (link: string): number => Number(link.slice(link.lastIndexOf('/') + 1));

/** The calling thread's kernel id, or undefined where there is no `/proc/thread-self`. */
export function currentThreadId(): number | undefined {
  try {
    return threadIdOf(readlinkSync('/proc/thread-self'));
  } catch {
    return undefined;
  }
}

/** Sets a thread's nice value; false where that is not possible (not Linux, or refused). */
export function niceThread(threadId: number, nice: number): boolean {
  try {
    setPriority(threadId, nice);
    return true;
  } catch {
    return false;
  }
}

/** Lowers the calling thread (a worker's, say) to `nice`; false where that is not possible. */
export function niceCurrentThread(nice: number): boolean {
  const id = currentThreadId();
  return id !== undefined && niceThread(id, nice);
}

/**
 * The ids of libuv's thread pool, where sharp and the PNG encoder work: an asynchronous
 * `readlink` runs on a pool thread, and `/proc/thread-self` names the thread resolving it.
 * Rounds of concurrent calls go out until `size` ids are seen or ten rounds have passed.
 */
export async function threadPoolIds(size: number): Promise<number[]> {
  const ids = new Set<number>();
  for (let round = 0; round < 10 && ids.size < size; round++) {
    const links = await Promise.all(Array.from({ length: 4 * size }, () => readlink('/proc/thread-self').catch(() => undefined)));
    for (const link of links) if (link) ids.add(threadIdOf(link));
  }
  return [...ids];
}

/** Threads of this process whose name starts with `prefix` (libvips names its own `libvips worker`). */
async function threadsNamed(prefix: string): Promise<number[]> {
  const tasks = await readdir('/proc/self/task').catch(() => [] as string[]);
  const named = await Promise.all(tasks.map(async (task) => ((await readFile(`/proc/self/task/${task}/comm`, 'utf8').catch(() => '')).startsWith(prefix) ? Number(task) : undefined)));
  return named.filter((id): id is number => id !== undefined);
}

/**
 * Lowers libuv's thread pool and libvips' workers to `nice`; the threads libvips starts
 * later from the pool inherit it. Call it once the model is loaded: ONNX Runtime's own
 * threads, started while the session is made, must keep the default priority. Returns the
 * threads lowered (none where the system does not allow it).
 */
export async function lowerBackgroundThreads(nice: number): Promise<number[]> {
  const size = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  const threads = [...new Set([...(await threadPoolIds(size)), ...(await threadsNamed('libvips'))])];
  return threads.filter((id) => niceThread(id, nice));
}
