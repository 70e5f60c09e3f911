import Type from 'typebox';
import { ERRORS } from '../errors.js';
import { answerHeaderSchemas } from './removal-reply.js';

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

/** The headers of every 200 background answer on the native API: the answer's own (`removal-reply.ts`), the request id and the rate limit's. */
export const ANSWER_HEADERS = {
  ...answerHeaderSchemas(),
  ...REQUEST_ID_HEADER,
  ...RATE_LIMIT_HEADERS,
};
