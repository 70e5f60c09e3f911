/**
 * The finish thread: everything an answer needs besides the model and its input. It decodes
 * the photo at full size as soon as the image is begun, runs the refinement's grid work
 * while the model runs, and once the mask arrives runs the finishing steps
 * (`finish-steps.ts`) and answers the encoded image. Messages: `finish-protocol.ts`.
 *
 * The megabytes of pixels a request goes through are allocated and freed on this thread, so
 * the garbage collections they set off are this small heap's, not the server's, and the
 * full-size pixels never reach the event loop.
 */
import { parentPort } from 'node:worker_threads';
import { wholeBuffer } from '../image/raw-image.js';
import { IdleCollector } from '../threads/idle-collector.js';
import { reportReady } from '../threads/start-worker-thread.js';
import { toThreadError } from '../threads/thread-error.js';
import type { FinishRequest, FinishResult } from './finish-protocol.js';
import { beginPhoto, finishImage, type FinishJob } from './finish-steps.js';
import { prepareRefinement } from './refine/refine-cutout.js';

const port = parentPort;
if (!port) throw new Error('finish-worker must run as a worker thread');
const jobs = new Map<number, FinishJob & { error?: unknown }>();
const collector = new IdleCollector();

function begin({ id, photo, maxPixels, spec }: Extract<FinishRequest, { type: 'begin' }>): void {
  const started = performance.now();
  const job: FinishJob = { spec, maxPixels, photo: beginPhoto(photo, spec, maxPixels), decodeMs: 0 };
  job.photo.then(() => (job.decodeMs = performance.now() - started), () => {}); // a failed decode is reported by finish
  jobs.set(id, job);
  collector.begin();
}

function prepare({ id, modelInput }: Extract<FinishRequest, { type: 'prepare' }>): void {
  const job = jobs.get(id);
  if (!job?.spec.refine) return; // dropped, or nothing to prepare
  try {
    job.prepared = prepareRefinement(modelInput, job.spec.refine);
  } catch (error) {
    job.error = error; // reported when the image is finished, the only message answered
  }
}

async function finish({ id, mask, region, view, backgroundImage, backgroundField }: Extract<FinishRequest, { type: 'finish' }>): Promise<FinishResult> {
  const job = jobs.get(id);
  jobs.delete(id);
  if (!job) throw new Error(`image ${id} was finished before it was begun`);
  if (job.error) throw job.error;
  return { id, ...(await finishImage(job, mask, { region, view, backgroundImage, backgroundField })) };
}

/**
 * Ends a job's work for the collector, with the bytes of its decoded photo (none if its decode
 * failed), once the decode has settled: an answer that fails before then does not wait for it.
 */
function ended(job: FinishJob | undefined): void {
  if (!job) return collector.end();
  void job.photo.then(
    ({ image }) => collector.end(image.data.byteLength),
    () => collector.end(),
  );
}

port.on('message', (message: FinishRequest) => {
  if (message.type === 'begin') begin(message);
  else if (message.type === 'prepare') prepare(message);
  else if (message.type === 'drop') {
    const job = jobs.get(message.id);
    if (job) {
      jobs.delete(message.id);
      ended(job);
    }
  } else {
    const job = jobs.get(message.id);
    finish(message)
      .finally(() => ended(job))
      .then(
        (result) => {
          const moved = result.bytes && wholeBuffer(result.bytes);
          port.postMessage(result, moved ? [moved as ArrayBuffer] : undefined);
        },
        (error: unknown) => port.postMessage({ id: message.id, error: toThreadError(error) } satisfies FinishResult),
      );
  }
});
reportReady({});
