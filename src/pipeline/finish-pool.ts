import type { FinishSpec } from './finish-protocol.js';
import { FinishThread, type Finisher, type ImageFinishing } from './finish-thread.js';
import type { PhotoInput } from './photo-input.js';

/** How the finish threads are shared out. */
export interface FinishPoolOptions {
  /** Finish threads at most (CUTOUT_FINISH_THREADS); at least 1. */
  threads: number;
  /** The worker each thread runs; default `finish-worker`, which tests may wrap. */
  module?: URL;
}

/**
 * The process's finish threads (CUTOUT_FINISH_THREADS): each image is given to the thread
 * that holds the fewest images, the first of them on a tie, and stays there from its begin to
 * its answer (its full-size photo lives on that thread). So one image at a time only ever
 * starts the first thread, and a thread is started only when every started one holds an
 * image. A thread that crashes fails the images it held, and only those; the next image
 * given to it starts it again. One per process, owned like the model: `create-services.ts`
 * makes it and closes it on shutdown.
 *
 * @example
 * const finisher = new FinishPool({ threads: config.finishThreads })
 * const finishing = finisher.begin(bytes, { maxPixels: 50e6, spec: {} })
 */
export class FinishPool implements Finisher {
  readonly #threads: FinishThread[];

  constructor({ threads, module }: FinishPoolOptions) {
    this.#threads = Array.from({ length: Math.max(1, Math.floor(threads)) }, () => new FinishThread({ module }));
  }

  /** Images each thread holds now (begun, neither answered nor cancelled), in the threads' order. */
  get held(): number[] {
    return this.#threads.map((thread) => thread.held);
  }

  begin(photo: PhotoInput, options: { maxPixels: number; spec: FinishSpec }): ImageFinishing {
    let least = this.#threads[0];
    for (const thread of this.#threads) if (thread.held < least.held) least = thread;
    return least.begin(photo, options);
  }

  /** Stops every thread once the images being finished have their answers; later calls to `begin` throw. */
  async close(): Promise<void> {
    await Promise.all(this.#threads.map((thread) => thread.close()));
  }
}
