import { Worker } from 'node:worker_threads';
import type { Cutout } from './compose.js';
import type { RawImage } from './raw-image.js';
import { DEFAULT_REFINE_SETTINGS, type RefineSettings } from './refine-cutout.js';
import type { RefineRequest, RefineResult } from './refine-worker.js';

export { DEFAULT_REFINE_SETTINGS, type RefineSettings };

/** One refinement under way on the refine thread; see {@link Refiner.begin}. */
export interface Refinement {
  /**
   * Hands the full-size photo over. sharp's buffers cannot be transferred, so it is copied
   * into a buffer of its own, a few megabytes per turn of the event loop (a 50-megapixel
   * photo is 150 MB, which in one piece would hold the loop for a tenth of a second), and
   * that buffer is moved to the thread, not shared: the thread writes the refined colours
   * into it and moves it back with the alpha. Memory shared with the thread would live as
   * long as the thread's own garbage collector left it, which is several photos later.
   */
  setImage(image: RawImage): void;
  /** Hands the model's mask over and resolves with the refined cut-out. */
  finish(mask: RawImage): Promise<Cutout>;
  /** Frees what the thread holds for a refinement that will not be finished. */
  cancel(): void;
}

/**
 * Third stage: the model's mask made into a full-size alpha that follows the photo's own
 * edges, and the colours of semi-transparent pixels cleaned of the old background
 * (`refine-cutout.ts` has the method, docs/quality.md the measurements). The work is plain
 * typed-array code on one worker thread, so a 10-megapixel photo never holds the event loop.
 *
 * A refinement starts before the mask exists: the grid work that needs only the model's
 * input, and the copy of the full-size photo to the thread, happen while the model runs, so
 * what is left once the mask arrives is the part that needs it.
 *
 * One Refiner per process, owned like the model: `main.ts` makes it and closes it on
 * shutdown. The thread starts on first use and is unref'd whenever no answer is awaited, so
 * an idle Refiner never keeps a process alive.
 *
 * @example
 * const refiner = new Refiner()
 * const refinement = refiner.begin(modelInput)
 * refinement.setImage(await decodeImage(bytes, options))
 * const { colour, alpha } = await refinement.finish(mask)
 * await refiner.close()
 */
export class Refiner {
  #worker: Worker | undefined;
  #waiting = new Map<number, { resolve: (result: { colour: RawImage; alpha: RawImage }) => void; reject: (error: Error) => void }>();
  #nextId = 0;
  #closed = false;
  /** Called when the last awaited answer is in, for `close`. */
  #drained: (() => void) | undefined;

  begin(modelInput: RawImage, settings: RefineSettings = DEFAULT_REFINE_SETTINGS): Refinement {
    const worker = this.#start();
    const id = this.#nextId++;
    const send = (message: RefineRequest, transfer: ArrayBuffer[] = []) => worker.postMessage(message, transfer);
    send({ type: 'begin', id, modelInput, settings: { ...settings } });
    let finishing = false;
    let cancelled = false;
    // Settles once the photo's copy has gone to the thread (the copy is the thread's from then on).
    let imageSent: Promise<void> | undefined;
    return {
      setImage: (image) => {
        if (cancelled || imageSent) return;
        imageSent = copyToOwnBuffer(image).then((own) => {
          if (!cancelled && this.#worker === worker) send({ type: 'image', id, image: own }, [own.data.buffer as ArrayBuffer]);
        });
      },
      finish: async (mask) => {
        finishing = true;
        if (!imageSent) throw new Error('refine: finish() before setImage()');
        // Awaited from now on, even while the photo is still being copied, so that `close`
        // waits for this answer instead of stopping the thread under it.
        const answer = new Promise<{ colour: RawImage; alpha: RawImage }>((resolve, reject) => {
          if (this.#worker !== worker) return reject(new Error('the refine thread stopped before the refinement finished'));
          this.#waiting.set(id, { resolve, reject });
          if (this.#waiting.size === 1) worker.ref();
        });
        answer.catch(() => {}); // handled below, once the copy is done
        await imageSent; // its message goes first
        send({ type: 'finish', id, mask });
        return { ...(await answer), invisibleBlack: true };
      },
      cancel: () => {
        if (finishing || cancelled) return;
        cancelled = true;
        if (this.#worker === worker) send({ type: 'drop', id });
      },
    };
  }

  /**
   * Stops the thread once the refinements being finished have their answers; later calls
   * to `begin` throw. Refinements begun but not finished are dropped with it.
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#waiting.size > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
    const worker = this.#worker;
    this.#worker = undefined;
    await worker?.terminate();
  }

  #start(): Worker {
    if (this.#closed) throw new Error('the refiner is closed');
    if (this.#worker) return this.#worker;
    const worker = startWorker();
    worker.unref();
    worker.on('message', ({ id, colour, alpha, error }: RefineResult) => {
      const call = this.#waiting.get(id);
      this.#waiting.delete(id);
      if (colour && alpha) call?.resolve({ colour, alpha });
      else call?.reject(new Error(`refine failed: ${error}`));
      if (this.#waiting.size === 0) {
        worker.unref();
        this.#drained?.();
      }
    });
    // A crashed thread fails what it held; the next refinement starts a new one.
    const fail = (error: Error) => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const call of this.#waiting.values()) call.reject(error);
      this.#waiting.clear();
      this.#drained?.();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the refine thread exited with code ${code}`)));
    this.#worker = worker;
    return worker;
  }
}

/** Bytes copied per turn of the event loop: a few milliseconds' worth. */
const COPY_CHUNK = 4 * 1024 * 1024;

/** The image in an ArrayBuffer of its own (transferable), copied a chunk per turn of the event loop. */
async function copyToOwnBuffer(image: RawImage): Promise<RawImage> {
  const data = new Uint8Array(image.data.length);
  for (let at = 0; at < data.length; at += COPY_CHUNK) {
    if (at > 0) await new Promise((resolve) => setImmediate(resolve));
    data.set(image.data.subarray(at, Math.min(data.length, at + COPY_CHUNK)), at);
  }
  return { ...image, data };
}

/**
 * Starts the worker module beside this one: compiled, the .js file; run from source (tests,
 * scripts under tsx or vitest), the .ts file through tsx's loader, as `onnx-segmenter.ts` does.
 */
function startWorker(): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./refine-worker.js', import.meta.url));
  const source = new URL('./refine-worker.ts', import.meta.url).href;
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(source)}); })`;
  return new Worker(bootstrap, { eval: true });
}
