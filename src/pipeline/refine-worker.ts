/**
 * The worker thread behind the refine stage: everything a refined answer needs besides the
 * model and its input. One refinement arrives in three messages:
 * - `begin`: the photo's own bytes, decoded here at full size, so the event loop never holds
 *   the full-size photo;
 * - `prepare` (while the model runs): the grid work that needs only the model's input;
 * - `finish` (the mask): the refinement at full size (`refine-cutout.ts`), then the PNG
 *   encode, answered with a {@link RefineResult}.
 * `drop` forgets a refinement that will not be finished.
 *
 * The megabytes of pixels a request goes through are allocated and freed on this thread, so
 * the garbage collections they set off are this small heap's, not the server's.
 */
import { parentPort } from 'node:worker_threads';
import { CutoutError, type ErrorCode } from '../errors.js';
import { decodeImage } from './decode.js';
import { encodePng, type PngCompression } from './encode.js';
import { wholeBuffer, type RawImage } from './raw-image.js';
import { finishRefinement, prepareRefinement, type PreparedRefinement, type RefineSettings } from './refine-cutout.js';

export type RefineRequest =
  | { type: 'begin'; id: number; photo: Uint8Array; maxPixels: number; pngCompression?: PngCompression }
  | { type: 'prepare'; id: number; modelInput: RawImage; settings: RefineSettings }
  | { type: 'finish'; id: number; mask: RawImage }
  | { type: 'drop'; id: number };

/** The answer to `finish`: the PNG and the photo's size, or the error that stopped it. */
export interface RefineResult {
  id: number;
  png?: Uint8Array;
  width?: number;
  height?: number;
  /** Milliseconds of the full-size decode (beside the model) and the encode. */
  timings?: { decode: number; encode: number };
  /** A CutoutError keeps its code, so the caller is told what was wrong with the image. */
  error?: { message: string; code?: ErrorCode };
}

interface Job {
  prepared?: PreparedRefinement;
  image: Promise<RawImage>;
  decodeMs: number;
  pngCompression?: PngCompression;
  error?: unknown;
}

const port = parentPort;
if (!port) throw new Error('refine-worker must run as a worker thread');
const jobs = new Map<number, Job>();

function begin({ id, photo, maxPixels, pngCompression }: Extract<RefineRequest, { type: 'begin' }>): void {
  const started = performance.now();
  const job: Job = { image: decodeImage(photo, { maxPixels, opaqueAlpha: true }), decodeMs: 0, pngCompression };
  job.image.then(() => (job.decodeMs = performance.now() - started), () => {}); // a failed decode is reported by finish
  jobs.set(id, job);
}

function prepare({ id, modelInput, settings }: Extract<RefineRequest, { type: 'prepare' }>): void {
  const job = jobs.get(id);
  if (!job) return; // dropped
  try {
    job.prepared = prepareRefinement(modelInput, settings);
  } catch (error) {
    job.error = error; // reported when the refinement is finished, the only message answered
  }
}

async function finish(id: number, mask: RawImage): Promise<RefineResult> {
  const job = jobs.get(id);
  jobs.delete(id);
  if (!job) throw new Error(`refinement ${id} finished before it began`);
  if (job.error) throw job.error;
  if (!job.prepared) throw new Error(`refinement ${id} finished before it was prepared`);
  const image = await job.image;
  const rgba = finishRefinement(job.prepared, image, mask);
  const start = performance.now();
  const png = await encodePng(rgba, job.pngCompression);
  const encode = performance.now() - start;
  return { id, png, width: image.width, height: image.height, timings: { decode: job.decodeMs, encode } };
}

port.on('message', (message: RefineRequest) => {
  if (message.type === 'begin') begin(message);
  else if (message.type === 'prepare') prepare(message);
  else if (message.type === 'drop') jobs.delete(message.id);
  else {
    finish(message.id, message.mask).then(
      (result) => {
        const moved = result.png && wholeBuffer(result.png);
        port.postMessage(result, moved ? [moved as ArrayBuffer] : undefined);
      },
      (error: unknown) => {
        const reported = error instanceof CutoutError ? { message: error.message, code: error.code } : { message: error instanceof Error ? (error.stack ?? error.message) : String(error) };
        port.postMessage({ id: message.id, error: reported } satisfies RefineResult);
      },
    );
  }
});
