import { SERVER_ERROR_STATUS, type ServerErrorCode } from './error-codes.js';

/**
 * What went wrong on the client's side, where no Cutout answer says it:
 * - `connection_failed`: no HTTP answer (refused, reset, DNS, TLS); `status` is 0.
 * - `timeout`: an attempt had no complete answer within the `timeout`; `status` is 0.
 * - `unexpected_response`: an answer that is not Cutout's (a proxy's HTML error page, a
 *   code this client does not know, a 200 that is not an image); `status` is the answer's.
 */
export type ClientErrorCode = 'connection_failed' | 'timeout' | 'unexpected_response';

/** Every `code` a {@link CutoutApiError} can carry: the server's registry, and the client's own three. */
export type CutoutErrorCode = ServerErrorCode | ClientErrorCode;

/** The fields of a {@link CutoutApiError}. */
export interface CutoutApiErrorInit {
  status: number;
  code: CutoutErrorCode;
  detail: string;
  requestId?: string;
  retryAfterMs?: number;
}

/**
 * The one error the client throws for a failed call (a call aborted through its `signal`
 * rejects with the signal's reason instead, as `fetch` does).
 *
 * @example
 * try {
 *   await client.removeBackground(bytes);
 * } catch (error) {
 *   if (error instanceof CutoutApiError && error.code === 'unsupported_image_format') skip(file);
 *   else throw error;
 * }
 */
export class CutoutApiError extends Error {
  /** The HTTP status, or 0 when there was no answer (`connection_failed`, `timeout`). */
  readonly status: number;
  /** The server's registered code (see its docs/api.md error table), or a {@link ClientErrorCode}. */
  readonly code: CutoutErrorCode;
  /** What was wrong with this request, in the server's words. */
  readonly detail: string;
  /** The server's `request_id` (also its `x-request-id` header): quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** The wait the server asked for in `Retry-After`, in ms, when it sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(init: CutoutApiErrorInit, options?: { cause?: unknown }) {
    super(`${init.status ? `${init.status} ` : ''}${init.code}: ${init.detail}`, options);
    this.name = 'CutoutApiError';
    this.status = init.status;
    this.code = init.code;
    this.detail = init.detail;
    this.requestId = init.requestId;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** True when `code` is one of the server's registered codes. */
export function isServerErrorCode(code: unknown): code is ServerErrorCode {
  return typeof code === 'string' && Object.hasOwn(SERVER_ERROR_STATUS, code);
}
