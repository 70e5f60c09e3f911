import Type from 'typebox';
import { ERRORS } from '../errors.js';

/**
 * Schemas that only describe (OpenAPI) what several routes share: the problem body of every
 * error, and the headers of a background answer.
 */

const Problem = Type.Object(
  {
    type: Type.String({ description: '`urn:cutout:error:<code>`' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String({ description: 'What was wrong with this request.' }),
    code: Type.String({ enum: Object.keys(ERRORS), description: 'Stable, for programs: the error registry (docs/api.md, Errors).' }),
    request_id: Type.String({ description: 'Also sent as the x-request-id header.' }),
  },
  { description: 'RFC 9457 problem details.' },
);

/** Sent with every answer, errors included. */
export const REQUEST_ID_HEADER = {
  'x-request-id': { type: 'string', description: 'The request id, as in error bodies and the server log. A client may send its own: up to 128 of A-Z a-z 0-9 . _ -' },
} as const;

/** Sent with every background answer (the limit is per user token). */
export const RATE_LIMIT_HEADERS = {
  'ratelimit-limit': { type: 'integer', description: 'Removals this user token may request per window.' },
  'ratelimit-remaining': { type: 'integer', description: 'Removals left in this window.' },
  'ratelimit-reset': { type: 'integer', description: 'Seconds until the window starts again.' },
} as const;

const RETRY_AFTER = { 'retry-after': { type: 'integer', description: 'Seconds to wait before sending the request again.' } } as const;

/**
 * The error answers of a route, one entry per status, each listing the registered codes it
 * may carry, for the OpenAPI description (`application/problem+json`), with their headers:
 * `x-request-id`, `retry-after` on 429 and 503, and the rate limit's on 429.
 *
 * @example response: { 200: …, ...problemResponses([400, 401, 503]) }
 */
export function problemResponses(statuses: readonly number[]): Record<number, unknown> {
  return Object.fromEntries(
    statuses.map((status) => {
      const codes = Object.entries(ERRORS)
        .filter(([, entry]) => entry.status === status)
        .map(([code, entry]) => `\`${code}\`: ${entry.message}`);
      const headers = { ...REQUEST_ID_HEADER, ...(status === 429 || status === 503 ? RETRY_AFTER : {}), ...(status === 429 ? RATE_LIMIT_HEADERS : {}) };
      return [status, { description: codes.join(' '), headers, content: { 'application/problem+json': { schema: Problem } } }];
    }),
  );
}

/** The headers of every 200 background answer. */
export const ANSWER_HEADERS = {
  'x-width': { type: 'integer', description: "The result's width in pixels (after crop and max_width/max_height)." },
  'x-height': { type: 'integer', description: "The result's height in pixels." },
  'x-model': { type: 'string', description: 'The model that cut: the request\'s `model`, or the server\'s default (the first of its CUTOUT_MODELS).' },
  'x-foreground-top': { type: 'integer', description: "Top of the subject's box in the input's (EXIF-oriented) pixels; the four x-foreground-* headers are absent when the model found no subject." },
  'x-foreground-left': { type: 'integer', description: "Left of the subject's box in the input's pixels." },
  'x-foreground-width': { type: 'integer', description: "Width of the subject's box in the input's pixels." },
  'x-foreground-height': { type: 'integer', description: "Height of the subject's box in the input's pixels." },
  'x-uncertainty': {
    type: 'number',
    minimum: 0,
    maximum: 1,
    description:
      "How doubtful the cut is, 0 to 1, from the looks that answered (X-Looks). After two looks (quality=best, or auto when the first was doubtful): how much the model's views disagree, summed over the picture and divided by the subject's area; after one: the model's own hesitation (1 − |2p − 1| per pixel) over the subject's area. Send the highest to a person (docs/api.md, \"Quality: one look or two\").",
  },
  'x-looks': { type: 'integer', minimum: 1, maximum: 2, description: 'How many times the model looked: 1 (quality=fast, or auto sure of its first look) or 2 (best, or auto after a doubtful first look).' },
  ...REQUEST_ID_HEADER,
  ...RATE_LIMIT_HEADERS,
} as const;
