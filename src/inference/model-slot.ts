/**
 * The model's turn, as an image's way through the pipeline needs it: `InferenceQueue` is
 * the server's; {@link alwaysFree} serves scripts and tests that run one image at a time.
 */
export interface ModelSlot {
  /**
   * Claims the model for an image that is still preparing its input, if the model is free
   * and nothing waits: then the image's full-size work may start at once, on the core the
   * model does not use. Returns the release (call it when the image is handed to `run`, or
   * fails before), or undefined when the model is busy: the full-size work then waits for
   * the image's turn, so that a burst does not hold every photo at full size in memory.
   */
  claim(): (() => void) | undefined;
  /**
   * Runs `work` (the model step) when the model is free. Rejects with the signal's reason if
   * it aborts while waiting; a full queue rejects at once (503 queue_full). `large`: the photo
   * is over LARGE_PHOTO_PIXELS, and may be overtaken by small ones.
   */
  run<T>(work: () => Promise<T>, signal?: AbortSignal, options?: { large?: boolean }): Promise<T>;
}

/** A slot that is always free: every claim succeeds and work runs at once. */
export const alwaysFree: ModelSlot = Object.freeze({
  claim: () => () => {},
  run: <T>(work: () => Promise<T>) => work(),
});
