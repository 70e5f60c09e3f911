/**
 * The one registry of Cutout's error codes. Every non-200 response carries one of these
 * `code`s in an `application/problem+json` body (RFC 9457); docs/api.md's error table is
 * checked against this object by `test/docs.test.ts`.
 */
export const ERRORS = {
  invalid_request: { status: 400, title: 'Invalid request', message: 'A required field is missing or has the wrong type.' },
  malformed_json: { status: 400, title: 'Malformed JSON', message: 'The request body is not valid JSON.' },
  invalid_base64: { status: 400, title: 'Invalid Base64', message: 'image_base64 is not valid standard Base64.' },
  webhook_secret_missing: {
    status: 400,
    title: 'No webhook signing secret',
    message: 'The token has no webhook signing secret yet, so a webhook could not be signed; make one in the dashboard (Tokens) or with `cutout webhook-secret --token …`, then send the job again.',
  },
  url_not_allowed: { status: 400, title: 'URL not allowed', message: 'image_url must be an http(s) URL of a public address.' },
  unknown_model: { status: 400, title: 'Unknown model', message: 'The model the request names is not loaded on this server.' },
  missing_token: { status: 401, title: 'Missing token', message: 'Send a managed token as the Authorization header.' },
  invalid_token: { status: 401, title: 'Invalid token', message: 'The token is unknown or malformed.' },
  expired_token: { status: 401, title: 'Expired token', message: 'The managed token has expired; exchange your user token again.' },
  revoked_token: { status: 401, title: 'Revoked token', message: 'The user token behind this token has been revoked.' },
  user_token_not_accepted: {
    status: 401,
    title: 'User token not accepted here',
    message: 'This is a user token (Token ID). Exchange it at POST /api/v1/auth/token for a managed token and send that instead.',
  },
  not_found: { status: 404, title: 'Not found', message: 'No such endpoint, or no such job for this account.' },
  result_not_available: { status: 409, title: 'No result', message: 'This item has no result: it is still waiting or running, or it failed or was cancelled.' },
  request_timeout: { status: 408, title: 'Request timeout', message: 'The request did not arrive in full within the server\'s time for it.' },
  payload_too_large: { status: 413, title: 'Payload too large', message: 'The image is larger than the byte limit.' },
  headers_too_large: { status: 431, title: 'Request headers too large', message: "The request's headers are larger than the server's limit." },
  unsupported_media_type: { status: 415, title: 'Unsupported media type', message: 'This endpoint does not accept that Content-Type.' },
  unsupported_image_format: {
    status: 415,
    title: 'Unsupported image format',
    message: 'The bytes are not a JPEG, PNG, WebP, GIF, TIFF, AVIF or HEIC image.',
  },
  image_decode_failed: { status: 422, title: 'Image could not be decoded', message: 'The image is corrupt or truncated.' },
  too_many_pixels: { status: 422, title: 'Too many pixels', message: 'The image has more pixels than the limit.' },
  no_foreground: { status: 422, title: 'No foreground', message: 'The model found no subject in the image, so there is nothing to crop to.' },
  idempotency_key_reused: {
    status: 422,
    title: 'Idempotency key reused',
    message: 'This Idempotency-Key was already used, within the last 24 hours, for a request with a different body.',
  },
  rate_limited: { status: 429, title: 'Too many requests', message: 'This token has used its removals for now; retry after Retry-After seconds.' },
  too_many_jobs: {
    status: 429,
    title: 'Too many jobs',
    message: 'This token has as many unfinished jobs, or waiting images, as it may have; retry after Retry-After seconds.',
  },
  too_many_starts: {
    status: 500,
    title: 'Started too often',
    message: 'The image was started as many times as an image may be, and its server stopped each time before it finished; it is not tried again.',
  },
  internal_error: { status: 500, title: 'Internal error', message: 'Something went wrong on our side.' },
  upstream_fetch_failed: { status: 502, title: 'Fetching the image failed', message: 'The image URL could not be fetched.' },
  queue_full: { status: 503, title: 'Busy', message: 'Too many images are waiting; retry shortly.' },
  over_memory_budget: {
    status: 503,
    title: 'Too large for this server',
    message: "The image with these options needs more memory than the server's budget for all requests together; send a smaller image or ask for a smaller answer.",
  },
  not_ready: { status: 503, title: 'Not ready', message: 'The model is still loading.' },
  store_unavailable: { status: 503, title: 'Storage unavailable', message: 'The database cannot be reached right now; retry shortly.' },
  upstream_timeout: { status: 504, title: 'Fetching the image timed out', message: 'The image URL did not answer in time.' },
  deadline_exceeded: { status: 504, title: 'Request took too long', message: 'The request did not finish within its deadline.' },
} as const satisfies Record<string, { status: number; title: string; message: string }>;

export type ErrorCode = keyof typeof ERRORS;

/**
 * An error Cutout means to show the caller: a registered `code` and a `detail` that says
 * what was wrong with this request. Low-level causes go in `cause` and are logged, never sent.
 *
 * @example throw new CutoutError('invalid_base64', 'Character 17 is not Base64.')
 */
export class CutoutError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Extra response headers, such as Retry-After. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, detail?: string, options?: { cause?: unknown; headers?: Record<string, string> }) {
    super(detail ?? ERRORS[code].message, { cause: options?.cause });
    this.name = 'CutoutError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.headers = options?.headers ?? {};
  }
}

/** The RFC 9457 body every non-200 response carries. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  request_id: string;
}

/** Renders a CutoutError as the problem body of one request. */
export function renderProblem(error: CutoutError, requestId: string): Problem {
  const entry = ERRORS[error.code];
  return {
    type: `urn:cutout:error:${error.code}`,
    title: entry.title,
    status: entry.status,
    detail: error.message,
    code: error.code,
    request_id: requestId,
  };
}
