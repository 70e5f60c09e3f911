/**
 * Reads `read` every 100 ms until `done` holds for what it read, and answers that; past
 * `timeoutMs` throws, naming `what` and the last value read.
 *
 * @example const job = await until(() => jobOf(server, id), (job) => job.status === 'done', 'the job to be done')
 */
export async function until<T>(read: () => Promise<T> | T, done: (value: T) => boolean, what: string, timeoutMs = 120_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting until ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
