import type { Worker } from 'node:worker_threads';
import { wholeBuffer, type RawImage } from '../image/raw-image.js';
import { besideThisModule, startWorkerThread } from '../threads/start-worker-thread.js';
import { fromThreadError } from '../threads/thread-error.js';
import type { FinishedImage, FinishRequest, FinishResult, FinishSpec } from './finish-protocol.js';
import type { FinishInputs } from './finish-steps.js';
import type { PhotoInput } from './photo-input.js';

/** An image's answer, made on the finish thread. */
export interface FinishedAnswer extends FinishedImage {
  bytes: Buffer;
}

/** One image's finishing under way on the finish thread; see {@link FinishThread.begin}. */
export interface ImageFinishing {
  /** Hands the model's input over (copied): the refinement's grid work runs while the model does. */
  prepare(modelInput: RawImage): void;
  /**
   * Hands the model's mask over (its pixels are moved, not copied), with the part of the
   * photo the model saw, the region of interest and the background image if the answer has
   * them, and resolves with the answer.
   */
  finish(mask: RawImage, inputs?: FinishInputs): Promise<FinishedAnswer>;
  /** Frees what the thread holds for an image that will not be finished. */
  cancel(): void;
}

/** What finishes images: the finish thread, or a test's stand-in. */
export interface Finisher {
  /** Begins an image's finishing. */
  begin(photo: PhotoInput, options: { maxPixels: number; spec: FinishSpec }): ImageFinishing;
  /** Stops once the images being finished have their answers. */
  close(): Promise<void>;
}

/**
 * The client of one finish thread (`finish-worker.ts`), which owns everything at full size:
 * the photo's full-size decode, the finishing steps (`finish-steps.ts`: alpha, then encode)
 * and the answer's bytes. The full-size pixels (a 2.5-megapixel photo goes through some
 * 20 MB of them) never reach the main thread, whose garbage collections would otherwise grow
 * with them and take the cores from the model.
 *
 * An image is begun before its mask exists: its full-size decode (begun when the caller
 * chooses: at once when the model is free, when the model takes the image otherwise) and the
 * grid work that needs only the model's input happen before or while the model runs, so what
 * is left once the mask arrives is the part that needs it, and the encode.
 *
 * The process's finish threads are a pool of these (`finish-pool.ts`), which gives each image
 * to one of them. The thread starts on first use and is unref'd whenever no answer is
 * awaited, so an idle FinishThread never keeps a process alive. A thread that crashed fails
 * what it held, and the next image starts a new one.
 *
 * @example
 * const finishing = finishThread.begin(bytes, { maxPixels: 50e6, spec: { refine: DEFAULT_REFINE_SETTINGS } })
 * finishing.prepare(modelInput)
 * const { bytes: png } = await finishing.finish(mask)
 */
export class FinishThread implements Finisher {
  readonly #module: URL;
  #thread: Promise<Worker> | undefined;
  /** Images begun and neither answered nor cancelled. */
  #held = 0;
  #waiting = new Map<number, { resolve: (answer: FinishedAnswer) => void; reject: (error: Error) => void }>();
  #nextId = 0;
  #closed = false;
  /** Called when the last awaited answer is in, for `close`. */
  #drained: (() => void) | undefined;

  /** `module`: the worker to run; default `finish-worker`, which tests may wrap. */
  constructor({ module = besideThisModule(import.meta.url, 'finish-worker') }: { module?: URL } = {}) {
    this.#module = module;
  }

  /** Images this thread holds: begun, and neither answered nor cancelled. */
  get held(): number {
    return this.#held;
  }

  begin(photo: PhotoInput, { maxPixels, spec }: { maxPixels: number; spec: FinishSpec }): ImageFinishing {
    const thread = this.#start();
    const id = this.#nextId++;
    const send = (worker: Worker, message: FinishRequest, transfer?: ArrayBufferLike) => worker.postMessage(message, transfer ? [transfer as ArrayBuffer] : undefined);
    // Messages before `finish` are not answered; a thread that failed to start fails `finish`.
    const post = (message: FinishRequest) => void thread.then((worker) => this.#thread === thread && send(worker, message), () => {});
    post({ type: 'begin', id, photo, maxPixels, spec });
    this.#held++;
    let finishing = false;
    let cancelled = false;
    let released = false;
    const letGo = () => {
      if (!released) this.#held--;
      released = true;
    };
    return {
      prepare: (modelInput) => {
        if (!cancelled && spec.refine) post({ type: 'prepare', id, modelInput });
      },
      finish: (mask, inputs = {}) => {
        finishing = true;
        // Awaited from now on, so that `close` waits for it even while the thread starts.
        const answer = new Promise<FinishedAnswer>((resolve, reject) =>
          this.#waiting.set(id, {
            resolve: (finished) => (letGo(), resolve(finished)),
            reject: (error) => (letGo(), reject(error)),
          }),
        );
        thread.then(
          (worker) => {
            if (this.#thread !== thread) return this.#settle(id, new Error('the finish thread stopped before the image was finished'));
            if (this.#waiting.size === 1) worker.ref();
            try {
              send(worker, { type: 'finish', id, mask, ...inputs }, wholeBuffer(mask.data));
            } catch (error) {
              // A mask whose pixels cannot be sent (moved away already) must not leave its answer hanging.
              this.#settle(id, error as Error);
              if (this.#waiting.size === 0) worker.unref();
            }
          },
          (error: Error) => this.#settle(id, error),
        );
        return answer;
      },
      cancel: () => {
        if (finishing || cancelled) return;
        cancelled = true;
        letGo();
        post({ type: 'drop', id });
      },
    };
  }

  /**
   * Stops the thread once the images being finished have their answers; later calls to
   * `begin` throw. Images begun but not finished are dropped with it.
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#waiting.size > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
    const thread = this.#thread;
    this.#thread = undefined;
    await thread?.then((worker) => worker.terminate(), () => {});
  }

  #start(): Promise<Worker> {
    if (this.#closed) throw new Error('the finish thread is closed');
    if (this.#thread) return this.#thread;
    const thread = startWorkerThread(this.#module).then(({ worker }) => {
      this.#watch(thread, worker);
      return worker;
    });
    thread.catch(() => {
      if (this.#thread === thread) this.#thread = undefined;
    });
    this.#thread = thread;
    return thread;
  }

  #watch(thread: Promise<Worker>, worker: Worker): void {
    worker.unref();
    worker.on('message', (result: FinishResult) => {
      if (result.error) this.#settle(result.id, fromThreadError(result.error));
      else {
        const { id, bytes, format, width, height, input, foreground, timings } = result;
        this.#settle(id, { bytes: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), format, width, height, input, foreground, timings });
      }
      if (this.#waiting.size === 0) worker.unref();
    });
    const fail = (error: Error) => {
      if (this.#thread === thread) this.#thread = undefined;
      for (const id of [...this.#waiting.keys()]) this.#settle(id, error);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the finish thread exited with code ${code}`)));
  }

  /** Resolves or rejects the awaited answer `id`; `close` goes on once none is awaited. */
  #settle(id: number, outcome: FinishedAnswer | Error): void {
    const call = this.#waiting.get(id);
    this.#waiting.delete(id);
    if (outcome instanceof Error) call?.reject(outcome);
    else call?.resolve(outcome);
    if (this.#waiting.size === 0) this.#drained?.();
  }
}
