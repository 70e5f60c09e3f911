/**
 * An HEIC thread: decodes one HEIC/HEIF photo at a time (`heic-decoder.ts`) and answers its
 * pixels, shared with the main thread rather than copied, and how much memory its decoder
 * holds afterwards, from which `heic-thread.ts` decides whether to keep the thread.
 * Messages: `heic-protocol.ts`.
 */
import { parentPort } from 'node:worker_threads';
import { reportReady } from '../threads/start-worker-thread.js';
import { LARGE_WORK_NICE, lowerThisThread, raiseThisThread, WORKER_NICE } from '../threads/thread-priority.js';
import { toThreadError } from '../threads/thread-error.js';
import { decodeHeic, decoderMemoryBytes } from './heic-decoder.js';
import type { HeicRequest, HeicResult } from './heic-protocol.js';

const port = parentPort;
if (!port) throw new Error('heic-worker must run as a worker thread');
// libheif's bindings print every decoding failure with console.log; each is answered as an
// image_decode_failed, which the request's own log line reports, so these would only repeat it.
console.log = () => {};

port.on('message', ({ id, heic, maxPixels, orientation, lowPriority }: HeicRequest) => {
  if (lowPriority) lowerThisThread(LARGE_WORK_NICE);
  const answer = (result: HeicResult) => {
    // A thread lowered for a large photo is ended once it answers, and ending it unmaps
    // libheif's heap (358 MiB after 49 MP) under the lock of the process's memory map. At nice
    // 19, behind the pixel work, that took 0.4–0.8 s, while the event loop's collector waited
    // for the same lock (scripts/probes/main-thread-waits.ts). Where the process may, the
    // thread takes back the other threads' priority first.
    if (lowPriority) raiseThisThread(WORKER_NICE);
    port.postMessage(result);
  };
  decodeHeic(heic, { maxPixels, orientation }).then(
    (pixels) => answer({ id, pixels, decoderBytes: decoderMemoryBytes() }),
    (error: unknown) => answer({ id, error: toThreadError(error), decoderBytes: decoderMemoryBytes() }),
  );
});
reportReady({});
