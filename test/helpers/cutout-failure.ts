import { expect } from 'vitest';
import { CutoutError, type ErrorCode } from '../../src/errors.js';

/**
 * Awaits `promise`, expects it to reject with a CutoutError of `code`, and returns that error
 * for further checks of its message or status.
 *
 * @example const error = await cutoutFailure(fetchImage(url, options), 'url_not_allowed')
 */
export async function cutoutFailure(promise: Promise<unknown>, code: ErrorCode): Promise<CutoutError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error, 'the call should have failed').toBeInstanceOf(CutoutError);
  expect((error as CutoutError).code, (error as CutoutError).message).toBe(code);
  return error as CutoutError;
}
