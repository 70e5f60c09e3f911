import { CutoutApiError } from './cutout-api-error.js';
import type { HttpAnswer } from './http-attempt.js';

/** The subject's bounding box in the input's (EXIF-oriented) pixels. */
export interface ForegroundBox {
  top: number;
  left: number;
  width: number;
  height: number;
}

/** One removal's answer. */
export interface RemovalResult {
  /** The encoded image (or `format: 'zip'`'s archive), exactly as the server sent it. */
  bytes: Uint8Array;
  /** Its type: `image/png`, `image/webp` or `image/jpeg`; `application/zip` for `format: 'zip'`. */
  contentType: string;
  /** The result's size in pixels (after any crop and resize). */
  width: number;
  height: number;
  /** Where the model found the subject, or null when it found none. */
  foreground: ForegroundBox | null;
  /** How doubtful the cut is, 0 to 1 (`X-Uncertainty`; the server's docs/api.md defines it), or null from a server that does not send it. */
  uncertainty: number | null;
  /** How many times the model looked (`X-Looks`): 1, or 2 when it took the mirror look too; null from a server that does not send it. */
  looks: 1 | 2 | null;
  /** The server's id of the request that answered (`x-request-id`). */
  requestId: string;
}

/**
 * Reads a 200 answer of a removal: raw image bytes (or the zip archive of `color.jpg` and
 * `alpha.png` that `format: 'zip'` asks for) and the `X-Width`, `X-Height`,
 * `X-Foreground-*`, `X-Uncertainty` and `X-Looks` headers. Anything else (a JSON Base64 answer from a server too old to
 * send raw bytes) is `unexpected_response`, not a guess.
 */
export function readRemovalResult(answer: HttpAnswer): RemovalResult {
  const contentType = answer.headers.get('content-type')?.split(';')[0].trim().toLowerCase() ?? '';
  const requestId = answer.headers.get('x-request-id') ?? '';
  const unexpected = (detail: string) => new CutoutApiError({ status: answer.status, code: 'unexpected_response', detail, requestId });
  if (!contentType.startsWith('image/') && contentType !== 'application/zip') {
    throw unexpected(`The answer is ${contentType || 'untyped'}, not an image: this server does not send raw image bytes (it predates Cutout's output options).`);
  }
  const width = integerHeader(answer.headers, 'x-width');
  const height = integerHeader(answer.headers, 'x-height');
  if (width === undefined || height === undefined) throw unexpected('The answer has no X-Width and X-Height headers.');
  const box = ['top', 'left', 'width', 'height'].map((side) => integerHeader(answer.headers, `x-foreground-${side}`));
  const [top, left, boxWidth, boxHeight] = box;
  const foreground = top !== undefined && left !== undefined && boxWidth !== undefined && boxHeight !== undefined ? { top, left, width: boxWidth, height: boxHeight } : null;
  const doubt = Number(answer.headers.get('x-uncertainty') ?? Number.NaN);
  const uncertainty = Number.isFinite(doubt) && doubt >= 0 && doubt <= 1 ? doubt : null;
  const looksHeader = integerHeader(answer.headers, 'x-looks');
  const looks = looksHeader === 1 || looksHeader === 2 ? looksHeader : null;
  return { bytes: answer.body, contentType, width, height, foreground, uncertainty, looks, requestId };
}

function integerHeader(headers: Headers, name: string): number | undefined {
  const value = headers.get(name);
  return value !== null && /^\d+$/.test(value.trim()) ? Number(value) : undefined;
}
