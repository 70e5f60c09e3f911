import { CutoutApiError, isServerErrorCode } from './cutout-api-error.js';
import { parseRetryAfter } from './retry-policy.js';

/** A whole HTTP answer, body read. */
export interface HttpAnswer {
  status: number;
  headers: Headers;
  body: Uint8Array;
}

/** The platform's `fetch`, or one passed in its place. */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

/**
 * Sends one request and reads its whole answer, within `timeoutMs`. A missing or broken
 * answer becomes a {@link CutoutApiError} (`connection_failed` or `timeout`), so that the
 * retry loop sees one kind of failure; an abort of `signal` rejects with its reason.
 */
export async function sendOnce(fetchFn: FetchFunction, url: string, init: RequestInit, timeoutMs: number, signal: AbortSignal | undefined): Promise<HttpAnswer> {
  signal?.throwIfAborted();
  const timeout = AbortSignal.timeout(timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  try {
    const response = await fetchFn(url, { ...init, signal: combined });
    // The body is part of the attempt: a connection that breaks half-way through is retried too.
    const body = new Uint8Array(await response.arrayBuffer());
    return { status: response.status, headers: response.headers, body };
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (timeout.aborted) throw new CutoutApiError({ status: 0, code: 'timeout', detail: `No complete answer from ${url} within ${timeoutMs} ms.` }, { cause: error });
    throw new CutoutApiError({ status: 0, code: 'connection_failed', detail: `Could not reach ${url}: ${describeCause(error)}.` }, { cause: error });
  }
}

/** fetch says "fetch failed"; the reason (ECONNREFUSED, …) is in its cause. */
function describeCause(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } } | null)?.cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}

/**
 * The error an answer other than 2xx stands for: the server's problem body when it is one
 * (`code`, `detail`, `request_id`), else `unexpected_response` with the status kept, so that
 * a proxy's 502 page is still retried as a 502.
 */
export function errorOfAnswer(answer: HttpAnswer): CutoutApiError {
  const requestId = answer.headers.get('x-request-id') ?? undefined;
  const retryAfterMs = parseRetryAfter(answer.headers.get('retry-after'));
  let problem: { code?: unknown; detail?: unknown; title?: unknown; request_id?: unknown } | undefined;
  if (/json/i.test(answer.headers.get('content-type') ?? '')) {
    try {
      problem = JSON.parse(new TextDecoder().decode(answer.body)) as typeof problem;
    } catch {
      problem = undefined;
    }
  }
  const detail = typeof problem?.detail === 'string' ? problem.detail : typeof problem?.title === 'string' ? problem.title : `HTTP ${answer.status}`;
  const id = typeof problem?.request_id === 'string' ? problem.request_id : requestId;
  if (isServerErrorCode(problem?.code)) return new CutoutApiError({ status: answer.status, code: problem.code, detail, requestId: id, retryAfterMs });
  const named = typeof problem?.code === 'string' ? ` (code ${problem.code}, unknown to this client)` : ', not a Cutout problem body';
  return new CutoutApiError({ status: answer.status, code: 'unexpected_response', detail: `${detail}${named}`, requestId: id, retryAfterMs });
}
