/**
 * The finish worker, which exits as a crash would (code 7) when an image is begun with
 * {@link CRASH_PIXELS} as its `maxPixels`: for the finish pool's tests of a thread that dies.
 * Imported on the main thread, it only gives the constant.
 */
import { parentPort } from 'node:worker_threads';
import type { FinishRequest } from '../../src/pipeline/finish-protocol.js';

export const CRASH_PIXELS = 13_131_313;

if (parentPort) {
  // Registered before the worker's own listener, so it runs first.
  parentPort.on('message', (message: FinishRequest) => {
    if (message.type === 'begin' && message.maxPixels === CRASH_PIXELS) process.exit(7);
  });
  await import('../../src/pipeline/finish-worker.js');
}
