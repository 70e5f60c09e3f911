import { FinishThread, type FinishedAnswer, type Finisher, type ImageFinishing } from './finish-thread.js';
import type { FinishSpec } from './finish-protocol.js';
import { LARGE_PHOTO_PIXELS, type PhotoInput } from './photo-input.js';

/** How the finishing is shared out between the two lanes; every field has a default. */
export interface FinishLanesOptions {
  /** A photo over this many pixels goes to the large lane; default LARGE_PHOTO_PIXELS. */
  largePixels?: number;
  /**
   * The large lane's thread is ended once it has been idle this long, so that what its
   * finishing of a large photo left (its heap, the C library's freed pages) goes back to the
   * system; the next large photo starts a new one. Default 10 s.
   */
  retireAfterMs?: number;
  /** Makes a lane's thread; for tests. */
  newThread?: () => Finisher;
}

/**
 * Two finish threads (`finish-thread.ts`): one for photos up to `largePixels`, one for those
 * over it. A large photo's full-size decode, refinement and encode take seconds; in one
 * thread, every small photo behind it waited for them. With two lanes a small photo waits for
 * the small ones before it only, and the two cores are shared between the lanes by the
 * system. The large lane's thread starts on its first photo and is retired once idle
 * (`retireAfterMs`), so an idle server does not keep a large photo's memory.
 *
 * @example
 * const finisher = new FinishLanes()
 * const finishing = finisher.begin(bytes, { maxPixels: 50e6, spec, pixels: 49e6 }) // the large lane
 */
export class FinishLanes implements Finisher {
  readonly #largePixels: number;
  readonly #retireAfterMs: number;
  readonly #newThread: () => Finisher;
  readonly #small: Finisher;
  #large: Finisher | undefined;
  /** Images begun on the large lane and not yet finished or cancelled. */
  #largeOpen = 0;
  #retire: NodeJS.Timeout | undefined;
  #retiring: Promise<void> | undefined;

  constructor(options: FinishLanesOptions = {}) {
    this.#largePixels = options.largePixels ?? LARGE_PHOTO_PIXELS;
    this.#retireAfterMs = options.retireAfterMs ?? 10_000;
    this.#newThread = options.newThread ?? (() => new FinishThread());
    this.#small = this.#newThread();
  }

  /** True while the large lane has a thread (started, not yet retired). */
  get largeLaneStarted(): boolean {
    return this.#large !== undefined;
  }

  /** Begins on the small lane, or on the large one when `pixels` (the photo's, when known) is over the line. */
  begin(photo: PhotoInput, options: { maxPixels: number; spec: FinishSpec; pixels?: number }): ImageFinishing {
    if ((options.pixels ?? 0) <= this.#largePixels) return this.#small.begin(photo, options);
    clearTimeout(this.#retire);
    this.#large ??= this.#newThread();
    const finishing = this.#large.begin(photo, options);
    this.#largeOpen++;
    let open = true;
    const end = () => {
      if (!open) return;
      open = false;
      if (--this.#largeOpen === 0) this.#scheduleRetire();
    };
    return {
      prepare: (modelInput) => finishing.prepare(modelInput),
      finish: (mask, inputs) => {
        const answer: Promise<FinishedAnswer> = finishing.finish(mask, inputs);
        answer.then(end, end);
        return answer;
      },
      cancel: () => {
        finishing.cancel();
        end();
      },
    };
  }

  /** Closes both lanes once the images being finished have their answers. */
  async close(): Promise<void> {
    clearTimeout(this.#retire);
    const large = this.#large;
    this.#large = undefined;
    await Promise.all([this.#small.close(), large?.close(), this.#retiring]);
  }

  #scheduleRetire(): void {
    clearTimeout(this.#retire);
    this.#retire = setTimeout(() => {
      const large = this.#large;
      if (!large || this.#largeOpen > 0) return;
      this.#large = undefined;
      this.#retiring = large.close();
    }, this.#retireAfterMs);
    this.#retire.unref();
  }
}
