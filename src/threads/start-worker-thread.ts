import { parentPort, Worker } from 'node:worker_threads';
import { fromThreadError, toThreadError, type ThreadError } from './thread-error.js';
import { threadsStarted } from './thread-priority.js';

/** A worker's first message: it is ready (with what its parent needs to know), or it could not start. */
export type WorkerStarted<Ready> = { type: 'ready'; ready: Ready } | { type: 'failed'; error: ThreadError };

/**
 * The URL of a worker module beside the calling one, with the caller's own extension: the
 * `.js` file once compiled, the `.ts` source when run from source (tests, scripts under tsx).
 *
 * @example startWorkerThread(besideThisModule(import.meta.url, 'finish-worker'))
 */
export function besideThisModule(callerUrl: string, name: string): URL {
  return new URL(`./${name}${callerUrl.endsWith('.ts') ? '.ts' : '.js'}`, callerUrl);
}

/**
 * Starts a worker thread and resolves once it has posted its {@link WorkerStarted} ready
 * message (see {@link reportReady}); rejects with its error if it could not start, and then
 * the thread is gone. A `.ts` module is loaded through tsx's loader inside the thread, as the
 * tests and scripts run the source.
 *
 * @example const { worker, ready } = await startWorkerThread<{ size: number }>(url, { modelPath })
 */
export function startWorkerThread<Ready>(module: URL, workerData?: unknown): Promise<{ worker: Worker; ready: Ready }> {
  const worker = module.pathname.endsWith('.ts')
    ? new Worker(`import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(module.href)}); })`, { eval: true, workerData })
    : new Worker(module, { workerData });
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => {
      worker.off('exit', onExit);
      reject(error);
    };
    const onExit = (code: number) => reject(new Error(`the worker ${module.pathname} exited with code ${code} before it was ready`));
    worker.once('error', onError);
    worker.once('exit', onExit);
    worker.once('message', (message: WorkerStarted<Ready>) => {
      worker.off('error', onError);
      worker.off('exit', onExit);
      if (message.type === 'ready') {
        threadsStarted();
        resolve({ worker, ready: message.ready });
      }
      else void worker.terminate().then(() => reject(fromThreadError(message.error)));
    });
  });
}

/** Inside a worker: tells {@link startWorkerThread} that the thread is ready. */
export function reportReady<Ready>(ready: Ready): void {
  parentPort?.postMessage({ type: 'ready', ready } satisfies WorkerStarted<Ready>);
}

/** Inside a worker: tells {@link startWorkerThread} that the thread could not start, and why. */
export function reportFailed(error: unknown): void {
  parentPort?.postMessage({ type: 'failed', error: toThreadError(error) } satisfies WorkerStarted<never>);
}
