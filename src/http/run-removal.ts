import type { FastifyInstance, FastifyReply } from 'fastify';
import { CutoutError } from '../errors.js';
import { removeBackground, type RemovedBackground } from '../pipeline/remove-background.js';

/**
 * The signal a request's work listens to: it aborts when the client goes away before the
 * answer is sent, or when the request's deadline (counted from its arrival) passes, so that
 * its queued work is dropped.
 */
export function requestSignal(reply: FastifyReply, deadlineMs: number): AbortSignal {
  const controller = new AbortController();
  const deadline = setTimeout(
    () => controller.abort(new CutoutError('deadline_exceeded', `The request did not finish within ${deadlineMs} ms; the server is busy, retry later.`)),
    deadlineMs - reply.elapsedTime,
  );
  reply.raw.once('close', () => {
    clearTimeout(deadline);
    if (!reply.raw.writableFinished) controller.abort(new CutoutError('invalid_request', 'The client closed the connection.'));
  });
  return controller.signal;
}

/** Settles like `work`, or rejects with the signal's reason as soon as it aborts. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Refuses at once, before the body is read, when the model is not loaded or its queue is full. */
export function assertModelCapacity(app: FastifyInstance): void {
  void app.model.segmenter; // throws not_ready while the model loads
  if (app.queue.full) throw app.queue.fullError();
}

/**
 * One image through the pipeline for a request: the model step waits in the app's inference
 * queue, and the request's deadline or disconnection drops it from there. The model cannot
 * be interrupted mid-run; past the deadline its result is dropped. `refine` is the request's
 * own choice, if it made one; otherwise CUTOUT_REFINE decides.
 */
export function runRemoval(app: FastifyInstance, bytes: Uint8Array, signal: AbortSignal, refine?: boolean): Promise<RemovedBackground> {
  const work = removeBackground(bytes, {
    segmenter: app.model.segmenter,
    maxPixels: app.config.maxPixels,
    schedule: (run) => app.queue.run(run, signal),
    claimModel: () => app.queue.claim(),
    refine: refine ?? app.config.refine,
    refiner: app.refiner,
    pngCompression: app.config.pngCompression,
  });
  work.catch(() => {});
  return untilAborted(work, signal);
}
