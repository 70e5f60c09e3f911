import type { Worker } from 'node:worker_threads';
import { besideThisModule, startWorkerThread } from '../threads/start-worker-thread.js';
import { fromThreadError } from '../threads/thread-error.js';
import type { HeicResult } from './heic-protocol.js';
import { isHeif } from './sniff-format.js';

/**
 * The client of the HEIC thread (`heic-worker.ts`): HEIC/HEIF photos, which sharp's prebuilt
 * libvips does not decode (it reads AVIF, not HEVC), become uncompressed TIFFs before the
 * pipeline sees them, on a thread of their own. The thread starts with the first HEIC photo,
 * is unref'd whenever none is awaited, and a thread that crashed fails what it held; the next
 * photo starts another. One per process, owned by the removal service's maker, which closes it.
 *
 * @example const bytes = await heic.readable(upload, 50e6) // the TIFF for an HEIC, else the upload itself
 */
export class HeicThread {
  #thread: Promise<Worker> | undefined;
  #waiting = new Map<number, { resolve: (tiff: Uint8Array) => void; reject: (error: Error) => void }>();
  #nextId = 0;

  /** The photo as the pipeline reads it: an HEIC/HEIF transcoded, anything else as it is. */
  async readable(photo: Uint8Array, maxPixels: number): Promise<Uint8Array> {
    if (!isHeif(photo)) return photo;
    const worker = await this.#start();
    const id = this.#nextId++;
    const answer = new Promise<Uint8Array>((resolve, reject) => this.#waiting.set(id, { resolve, reject }));
    if (this.#waiting.size === 1) worker.ref();
    worker.postMessage({ id, heic: photo, maxPixels });
    return answer;
  }

  /** Stops the thread; photos being decoded fail. */
  async close(): Promise<void> {
    const thread = this.#thread;
    this.#thread = undefined;
    await thread?.then((worker) => worker.terminate(), () => {});
  }

  #start(): Promise<Worker> {
    if (this.#thread) return this.#thread;
    const thread = startWorkerThread(besideThisModule(import.meta.url, 'heic-worker')).then(({ worker }) => {
      worker.unref();
      worker.on('message', (result: HeicResult) => {
        const call = this.#waiting.get(result.id);
        this.#waiting.delete(result.id);
        if (result.error) call?.reject(fromThreadError(result.error));
        else call?.resolve(result.tiff);
        if (this.#waiting.size === 0) worker.unref();
      });
      const fail = (error: Error) => {
        if (this.#thread === thread) this.#thread = undefined;
        for (const [id, call] of this.#waiting) {
          this.#waiting.delete(id);
          call.reject(error);
        }
      };
      worker.on('error', fail);
      worker.on('exit', (code) => fail(new Error(`the HEIC thread exited with code ${code}`)));
      return worker;
    });
    thread.catch(() => {
      if (this.#thread === thread) this.#thread = undefined;
    });
    this.#thread = thread;
    return thread;
  }
}
