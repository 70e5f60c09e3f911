/**
 * The worker thread behind the refine stage: runs the two halves of `refine-cutout.ts`,
 * plain typed-array loops over the grid and over the outline of a full-size photo, away from
 * the event loop. One refinement arrives in three messages, so that the first two can come
 * while the model runs: `begin` (model input: the grid work that needs only the photo),
 * `image` (the full-size photo, its buffer moved here), `finish` (the mask; answered with a
 * {@link RefineResult}, which moves the photo's buffer back).
 * `drop` forgets a refinement that will not be finished.
 */
import { parentPort } from 'node:worker_threads';
import type { RawImage } from './raw-image.js';
import { finishRefinement, prepareRefinement, type PreparedRefinement, type RefineSettings } from './refine-cutout.js';

export type RefineRequest =
  | { type: 'begin'; id: number; modelInput: RawImage; settings: RefineSettings }
  | { type: 'image'; id: number; image: RawImage }
  | { type: 'finish'; id: number; mask: RawImage }
  | { type: 'drop'; id: number };

/**
 * The answer to `finish`: the photo the `image` message brought, its colours rewritten in
 * place, and the full-size alpha, both transferred.
 */
export interface RefineResult {
  id: number;
  colour?: RawImage;
  alpha?: RawImage;
  error?: string;
}

interface Job {
  prepared?: PreparedRefinement;
  image?: RawImage;
  error?: unknown;
}

const port = parentPort;
if (!port) throw new Error('refine-worker must run as a worker thread');
const jobs = new Map<number, Job>();

port.on('message', (message: RefineRequest) => {
  const job = jobs.get(message.id) ?? {};
  jobs.set(message.id, job);
  try {
    if (message.type === 'begin') job.prepared = prepareRefinement(message.modelInput, message.settings);
    else if (message.type === 'image') job.image = message.image;
    else if (message.type === 'drop') jobs.delete(message.id);
    else {
      jobs.delete(message.id);
      if (job.error) throw job.error;
      if (!job.prepared || !job.image) throw new Error(`refinement ${message.id} finished before it began or had its image`);
      const alpha = finishRefinement(job.prepared, job.image, message.mask);
      port.postMessage({ id: message.id, colour: job.image, alpha } satisfies RefineResult, [job.image.data.buffer as ArrayBuffer, alpha.data.buffer as ArrayBuffer]);
    }
  } catch (error) {
    // A failed begin is reported when the refinement is finished, the only message answered.
    if (message.type !== 'finish') job.error = error;
    else port.postMessage({ id: message.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies RefineResult);
  }
});
