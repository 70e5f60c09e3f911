/**
 * An HEIC thread: decodes one HEIC/HEIF photo at a time (`heic-decoder.ts`) and answers its
 * pixels, shared with the main thread rather than copied, and how much memory its decoder
 * holds afterwards, from which `heic-thread.ts` decides whether to keep the thread.
 * Messages: `heic-protocol.ts`.
 */
import { parentPort } from 'node:worker_threads';
import { reportReady } from '../threads/start-worker-thread.js';
import { LARGE_WORK_NICE, lowerThisThread } from '../threads/thread-priority.js';
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
  decodeHeic(heic, { maxPixels, orientation }).then(
    (pixels) => port.postMessage({ id, pixels, decoderBytes: decoderMemoryBytes() } satisfies HeicResult),
    (error: unknown) => port.postMessage({ id, error: toThreadError(error), decoderBytes: decoderMemoryBytes() } satisfies HeicResult),
  );
});
reportReady({});
