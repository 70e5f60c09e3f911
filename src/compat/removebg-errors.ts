import type { CutoutError, ErrorCode } from '../errors.js';
import { EmptyRegionError } from '../pipeline/decode.js';
import { OptionValueError } from '../options/option-value-error.js';

/**
 * The error codes of the remove.bg-compatible routes, as remove.bg names them, each with its
 * status and title. Their body is remove.bg's `{"errors": [{"title", "code", "detail"}]}`,
 * never the native problem+json; docs/clients.md ("Coming from remove.bg or Photoroom") lists them.
 */
export const REMOVEBG_ERRORS = {
  invalid_request: { status: 400, title: 'Invalid request' },
  missing_source: { status: 400, title: 'No image given' },
  multiple_sources: { status: 400, title: 'Multiple image sources given' },
  multiple_bg_sources: { status: 400, title: 'Multiple background sources given' },
  invalid_size: { status: 400, title: 'Invalid size' },
  invalid_format: { status: 400, title: 'Invalid format' },
  invalid_channels: { status: 400, title: 'Invalid channels' },
  invalid_roi: { status: 400, title: 'Invalid roi' },
  roi_region_empty: { status: 400, title: 'The roi covers no pixel of the image' },
  invalid_crop_margin: { status: 400, title: 'Invalid crop_margin' },
  invalid_scale: { status: 400, title: 'Invalid scale' },
  invalid_position: { status: 400, title: 'Invalid position' },
  invalid_bg_color: { status: 400, title: 'Invalid bg_color' },
  invalid_shadow: { status: 400, title: 'Invalid shadow' },
  failed_image_download: { status: 400, title: 'Failed to download image from given image_url' },
  failed_bg_download: { status: 400, title: 'Failed to download background image from given bg_image_url' },
  invalid_file_type: { status: 400, title: 'Invalid file type' },
  failed_to_read_image: { status: 400, title: 'Failed to read image' },
  file_too_large: { status: 400, title: 'File too large' },
  resolution_too_high: { status: 400, title: 'Input image resolution too high' },
  unknown_foreground: { status: 400, title: 'Could not identify foreground in image' },
  auth_failed: { status: 403, title: 'API Key invalid' },
  not_found: { status: 404, title: 'Not found' },
  rate_limit_exceeded: { status: 429, title: 'Rate limit exceeded' },
  unknown_error: { status: 500, title: 'Unknown error' },
  service_unavailable: { status: 503, title: 'Service unavailable' },
  timeout: { status: 504, title: 'Request took too long' },
} as const satisfies Record<string, { status: number; title: string }>;

export type RemoveBgCode = keyof typeof REMOVEBG_ERRORS;

/**
 * What each native error becomes on the compatible routes. A `Record` over every native
 * code, so a code added to the registry does not compile until it is mapped here.
 */
const FROM_NATIVE: Record<ErrorCode, RemoveBgCode> = {
  invalid_request: 'invalid_request',
  malformed_json: 'invalid_request',
  invalid_base64: 'failed_to_read_image',
  url_not_allowed: 'failed_image_download',
  // These routes take no model option and always cut with the default model.
  unknown_model: 'invalid_request',
  missing_token: 'auth_failed',
  invalid_token: 'auth_failed',
  expired_token: 'auth_failed',
  revoked_token: 'auth_failed',
  user_token_not_accepted: 'auth_failed',
  not_found: 'not_found',
  // The jobs' codes: these routes make no jobs, but every native code has its mapping.
  result_not_available: 'not_found',
  idempotency_key_reused: 'invalid_request',
  too_many_jobs: 'rate_limit_exceeded',
  too_many_starts: 'unknown_error',
  webhook_secret_missing: 'invalid_request',
  payload_too_large: 'file_too_large',
  headers_too_large: 'invalid_request',
  request_timeout: 'invalid_request',
  unsupported_media_type: 'invalid_request',
  unsupported_image_format: 'invalid_file_type',
  image_decode_failed: 'failed_to_read_image',
  too_many_pixels: 'resolution_too_high',
  no_foreground: 'unknown_foreground',
  rate_limited: 'rate_limit_exceeded',
  internal_error: 'unknown_error',
  upstream_fetch_failed: 'failed_image_download',
  queue_full: 'service_unavailable',
  over_memory_budget: 'service_unavailable',
  not_ready: 'service_unavailable',
  store_unavailable: 'service_unavailable',
  upstream_timeout: 'failed_image_download',
  deadline_exceeded: 'timeout',
};

/** One error as the compatible routes send it. */
export interface RemoveBgError {
  status: number;
  code: RemoveBgCode;
  title: string;
  detail: string;
  headers: Readonly<Record<string, string>>;
}

/**
 * A native error (already a CutoutError, see `toCutoutError`) in remove.bg's terms: a bad
 * option value by the problem its reader named (`option-value-error.ts`, whose names are
 * remove.bg's codes: the assignment below does not compile otherwise), else by its code.
 */
export function toRemoveBgError(error: CutoutError): RemoveBgError {
  const code = error instanceof OptionValueError ? error.problem : error instanceof EmptyRegionError ? 'roi_region_empty' : FROM_NATIVE[error.code];
  const { status, title } = REMOVEBG_ERRORS[code];
  // Keep a native 5xx's status (503 with its Retry-After, 504): clients retry on those.
  const kept = error.status >= 500 ? error.status : status;
  const detail = error.status >= 500 && error.code === 'internal_error' ? 'Something went wrong on our side.' : error.message;
  return { status: kept, code, title, detail, headers: error.headers };
}
