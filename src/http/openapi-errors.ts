import { ERRORS, type ErrorCode } from '../errors.js';

/** The slice of an OpenAPI 3 document this module reads and writes. */
interface OpenApiDocument {
  paths?: Record<string, Record<string, OpenApiOperation | unknown>>;
  components?: { schemas?: Record<string, unknown>; [other: string]: unknown };
  [other: string]: unknown;
}

interface OpenApiOperation {
  responses?: Record<string, OpenApiResponse>;
  [other: string]: unknown;
}

interface OpenApiResponse {
  description?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, unknown>;
  [other: string]: unknown;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);

const PROBLEM_SCHEMA = {
  type: 'object',
  description: 'An RFC 9457 problem: every answer other than 200.',
  required: ['type', 'title', 'status', 'detail', 'code', 'request_id'],
  properties: {
    type: { type: 'string', description: '`urn:cutout:error:` and the code.', example: 'urn:cutout:error:invalid_base64' },
    title: { type: 'string', description: 'The code in words.' },
    status: { type: 'integer', description: 'The HTTP status.' },
    detail: { type: 'string', description: 'What was wrong with this request.' },
    code: { type: 'string', enum: Object.keys(ERRORS), description: 'Stable, for programs: see the error table in the README.' },
    request_id: { type: 'string', description: 'Also sent as `x-request-id`; the server log has it.' },
  },
};

const header = (description: string, type: 'string' | 'integer' = 'string') => ({ description, schema: { type } });

const REQUEST_ID = header('The request id (also `request_id` in a problem body). A client may send its own: up to 128 of `A-Z a-z 0-9 . _ -`.');
const RETRY_AFTER = header('Seconds to wait before sending the request again.', 'integer');
const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': header('Removals this user token may request per window.', 'integer'),
  'RateLimit-Remaining': header('Removals left in this window.', 'integer'),
  'RateLimit-Reset': header('Seconds until the window starts again.', 'integer'),
};

/** The codes an operation can answer with: the token exchange a few, the removals nearly all. */
function codesOf(path: string): ErrorCode[] {
  const all = Object.keys(ERRORS) as ErrorCode[];
  if (path === '/api/v1/auth/token') return ['missing_token', 'invalid_token', 'expired_token', 'revoked_token', 'internal_error'];
  // A background URL (bg_image_url) can be fetched by any of the three, so the fetch errors stay.
  return all.filter(
    (code) => code !== 'not_found' && !(code === 'invalid_base64' && !path.endsWith('/base64')) && !(code === 'malformed_json' && path.endsWith('/multipart')),
  );
}

/**
 * Adds to every `/api/v1/` operation of the document the problem answers it can give,
 * taken from the error registry (so a new code is documented the day it is registered):
 * one response per status, listing its codes, with the `Problem` schema; `x-request-id` on
 * every answer, `Retry-After` on 429 and 503, the `RateLimit-*` headers on the removals.
 * Responses a route already describes are kept; only missing ones and headers are added.
 * Used as @fastify/swagger's `transformObject`.
 */
export function addErrorResponses<T>(document: T): T {
  const doc = document as OpenApiDocument;
  doc.components = { ...doc.components, schemas: { ...doc.components?.schemas, Problem: PROBLEM_SCHEMA } };
  for (const [path, operations] of Object.entries(doc.paths ?? {})) {
    if (!path.startsWith('/api/v1/')) continue;
    const removal = path.startsWith('/api/v1/background/');
    for (const [method, value] of Object.entries(operations)) {
      if (!METHODS.has(method)) continue;
      const operation = value as OpenApiOperation;
      const responses = (operation.responses ??= {});
      const byStatus = new Map<number, ErrorCode[]>();
      for (const code of codesOf(path)) byStatus.set(ERRORS[code].status, [...(byStatus.get(ERRORS[code].status) ?? []), code]);
      for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
        responses[String(status)] ??= {
          description: codes.map((code) => `\`${code}\`: ${ERRORS[code].message}`).join(' '),
          content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
        };
      }
      for (const [status, response] of Object.entries(responses)) {
        const headers: Record<string, unknown> = { 'x-request-id': REQUEST_ID };
        if (status === '429' || status === '503') headers['Retry-After'] = RETRY_AFTER;
        if (removal) Object.assign(headers, RATE_LIMIT_HEADERS);
        response.headers = { ...headers, ...response.headers };
      }
    }
  }
  return document;
}
