import { CutoutError, ERRORS, type ErrorCode } from '../errors.js';

/**
 * An error as it crosses between threads: plain data that survives `postMessage`, keeping
 * what a plain string would lose: the registered `code` of a CutoutError (so the client is
 * told what was wrong with its image), any other `code` (`ENOMEM`, …), the stack and the
 * chain of causes.
 */
export interface ThreadError {
  name: string;
  message: string;
  code?: string;
  stack?: string;
  cause?: ThreadError;
}

/** The form of `error` to post to another thread; causes are followed a few levels deep. */
export function toThreadError(error: unknown, depth = 0): ThreadError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const code = (error as { code?: unknown }).code;
  return {
    name: error.name,
    message: error.message,
    code: typeof code === 'string' ? code : undefined,
    stack: error.stack,
    cause: error.cause !== undefined && depth < 4 ? toThreadError(error.cause, depth + 1) : undefined,
  };
}

/**
 * The error again on the receiving side: a CutoutError when it carries a registered code,
 * otherwise an Error with the same name, message, code and causes. The stack is the other
 * thread's, so a log shows where it really failed.
 *
 * @example worker.on('message', (m) => m.error && reject(fromThreadError(m.error)))
 */
export function fromThreadError(sent: ThreadError): Error {
  const cause = sent.cause ? fromThreadError(sent.cause) : undefined;
  const error = isErrorCode(sent.code) ? new CutoutError(sent.code, sent.message, { cause }) : Object.assign(new Error(sent.message, { cause }), sent.code ? { code: sent.code } : {});
  if (!(error instanceof CutoutError)) error.name = sent.name;
  if (sent.stack) error.stack = sent.stack;
  return error;
}

function isErrorCode(code: string | undefined): code is ErrorCode {
  return code !== undefined && Object.hasOwn(ERRORS, code);
}
