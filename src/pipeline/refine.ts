import { Worker } from 'node:worker_threads';
import { CutoutError } from '../errors.js';
import type { PngCompression } from './encode.js';
import { wholeBuffer, type RawImage } from './raw-image.js';
import { DEFAULT_REFINE_SETTINGS, type RefineSettings } from './refine-cutout.js';
import type { RefineRequest, RefineResult } from './refine-worker.js';

export { DEFAULT_REFINE_SETTINGS, type RefineSettings };

/** The photo a refinement starts from. */
export interface RefineInput {
  /** The photo's encoded bytes; the thread decodes them at full size itself. */
  photo: Uint8Array;
  maxPixels: number;
  /** How hard the PNG is compressed (CUTOUT_PNG_COMPRESSION); encode.ts has the default. */
  pngCompression?: PngCompression;
}

/** A finished refinement: the answer's PNG and what each step on the thread took. */
export interface RefinedCutout {
  png: Buffer;
  width: number;
  height: number;
  /** Milliseconds: the full-size decode (beside the model) and the encode; the caller times the rest. */
  timings: { decode: number; encode: number };
}

/** One refinement under way on the refine thread; see {@link Refiner.begin}. */
export interface Refinement {
  /** Hands the model's input over: the grid work that needs only it runs while the model does. */
  prepare(modelInput: RawImage, settings?: RefineSettings): void;
  /** Hands the model's mask over (its pixels are moved, not copied) and resolves with the PNG of the refined cut-out. */
  finish(mask: RawImage): Promise<RefinedCutout>;
  /** Frees what the thread holds for a refinement that will not be finished. */
  cancel(): void;
}

/**
 * Third and fourth stages on one worker thread: the full-size decode, the model's mask made
 * into a full-size alpha that follows the photo's own edges, the colours of semi-transparent
 * pixels cleaned of the old background (`refine-cutout.ts` has the method, docs/quality.md
 * the measurements), and the PNG encode. The refinement is plain typed-array code, so a
 * 10-megapixel photo never holds the event loop; and the full-size pixels (a 2.5-megapixel
 * photo goes through some 20 MB of them) never reach the main thread, whose garbage
 * collections would otherwise grow with them and take the cores from the model.
 *
 * A refinement starts before the mask exists: the full-size decode (begun when the caller
 * chooses: at once when the model is free, when the model takes the image otherwise) and the
 * grid work that needs only the model's input happen before or while the model runs, so what
 * is left once the mask arrives is the part that needs it, and the encode.
 *
 * One Refiner per process, owned like the model: `main.ts` makes it and closes it on
 * shutdown. The thread starts on first use and is unref'd whenever no answer is awaited, so
 * an idle Refiner never keeps a process alive.
 *
 * @example
 * const refiner = new Refiner()
 * const refinement = refiner.begin({ photo: bytes, maxPixels: 50e6 })
 * refinement.prepare(modelInput)
 * const { png } = await refinement.finish(mask)
 * await refiner.close()
 */
export class Refiner {
  #worker: Worker | undefined;
  #waiting = new Map<number, { resolve: (result: RefinedCutout) => void; reject: (error: Error) => void }>();
  #nextId = 0;
  #closed = false;
  /** Called when the last awaited answer is in, for `close`. */
  #drained: (() => void) | undefined;

  begin({ photo, maxPixels, pngCompression }: RefineInput): Refinement {
    const worker = this.#start();
    const id = this.#nextId++;
    const send = (message: RefineRequest, transfer?: ArrayBufferLike) => worker.postMessage(message, transfer ? [transfer as ArrayBuffer] : undefined);
    send({ type: 'begin', id, photo, maxPixels, pngCompression });
    let finishing = false;
    let cancelled = false;
    return {
      prepare: (modelInput, settings = DEFAULT_REFINE_SETTINGS) => {
        if (!cancelled && this.#worker === worker) send({ type: 'prepare', id, modelInput, settings: { ...settings } });
      },
      finish: (mask) => {
        finishing = true;
        return new Promise<RefinedCutout>((resolve, reject) => {
          if (this.#worker !== worker) return reject(new Error('the refine thread stopped before the refinement finished'));
          this.#waiting.set(id, { resolve, reject });
          if (this.#waiting.size === 1) worker.ref();
          send({ type: 'finish', id, mask }, wholeBuffer(mask.data));
        });
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
    worker.on('message', ({ id, png, width, height, timings, error }: RefineResult) => {
      const call = this.#waiting.get(id);
      this.#waiting.delete(id);
      if (png && width && height && timings) call?.resolve({ png: Buffer.from(png.buffer, png.byteOffset, png.byteLength), width, height, timings });
      else if (error?.code) call?.reject(new CutoutError(error.code, error.message));
      else call?.reject(new Error(`refine failed: ${error?.message}`));
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
