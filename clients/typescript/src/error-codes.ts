// Generated from src/errors.ts by `npx tsx scripts/client-error-codes.ts`: do not edit.
// test/client-error-codes.test.ts fails when this file and the server's registry differ.

/** Every code a Cutout server answers with, and the HTTP status it comes with. */
export const SERVER_ERROR_STATUS = {
  invalid_request: 400,
  malformed_json: 400,
  invalid_base64: 400,
  webhook_secret_missing: 400,
  url_not_allowed: 400,
  unknown_model: 400,
  missing_token: 401,
  invalid_token: 401,
  expired_token: 401,
  revoked_token: 401,
  user_token_not_accepted: 401,
  not_found: 404,
  result_not_available: 409,
  request_timeout: 408,
  payload_too_large: 413,
  headers_too_large: 431,
  unsupported_media_type: 415,
  unsupported_image_format: 415,
  image_decode_failed: 422,
  too_many_pixels: 422,
  no_foreground: 422,
  idempotency_key_reused: 422,
  rate_limited: 429,
  too_many_jobs: 429,
  too_many_starts: 500,
  internal_error: 500,
  upstream_fetch_failed: 502,
  queue_full: 503,
  over_memory_budget: 503,
  not_ready: 503,
  store_unavailable: 503,
  upstream_timeout: 504,
  deadline_exceeded: 504,
} as const;

/** A `code` of the server's error registry. */
export type ServerErrorCode = keyof typeof SERVER_ERROR_STATUS;
