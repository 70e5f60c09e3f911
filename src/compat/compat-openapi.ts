import { API_TAG } from '../http/openapi-document.js';
import { REQUEST_ID_HEADER } from '../http/openapi-schemas.js';
import { answerHeaderSchemas } from '../http/removal-reply.js';
import { OPTIONS, optionsOf, wireUse } from '../options/option-table.js';
import { REMOVEBG_ERRORS } from './removebg-errors.js';

/**
 * The OpenAPI description of the remove.bg- and Photoroom-compatible routes. Their bodies are
 * read by the handlers (three content types, remove.bg's habits), so these schemas describe
 * and do not validate.
 */

const security = [{ apiKey: [] }];
const BINARY = { schema: { type: 'string', format: 'binary' } };
const text = (description: string) => ({ type: 'string', description });

/**
 * The options a compatible wire takes, from the option table: each kind's JSON schema (as the
 * native API's), narrowed to the wire's own words, with its default here.
 */
function wireFields(wire: 'removebg' | 'photoroom') {
  return Object.fromEntries(
    optionsOf(wire).map((name) => {
      const use = wireUse(name, wire);
      const byDefault = use?.default ? ` Default here: ${use.default}.` : '';
      return [name, { ...OPTIONS[name].kind.schema, ...(use?.only && { enum: [...use.only] }), description: OPTIONS[name].description + byDefault }];
    }),
  );
}

const REMOVEBG_FIELDS = {
  image_file: { type: 'string', format: 'binary', description: 'The photo, uploaded (multipart only). Exactly one of image_file, image_file_b64 and image_url.' },
  image_file_b64: text('The photo as Base64.'),
  image_url: text('http(s) URL of the photo; Cutout fetches it with the native guards and limits.'),
  ...wireFields('removebg'),
  bg_image_file: { type: 'string', format: 'binary', description: 'A background image, uploaded (multipart only).' },
};
const BODY_SCHEMA = { type: 'object', properties: REMOVEBG_FIELDS };
const RESULT_JSON = {
  type: 'object',
  properties: {
    data: {
      type: 'object',
      properties: {
        result_b64: text('Base64 of the result.'),
        foreground_top: { type: 'integer' },
        foreground_left: { type: 'integer' },
        foreground_width: { type: 'integer' },
        foreground_height: { type: 'integer' },
      },
    },
  },
};
const REMOVEBG_ERROR = {
  type: 'object',
  properties: {
    errors: {
      type: 'array',
      items: { type: 'object', properties: { title: { type: 'string' }, code: { type: 'string', enum: Object.keys(REMOVEBG_ERRORS) }, detail: { type: 'string' } } },
    },
  },
};
const PHOTOROOM_ERROR = { type: 'object', properties: { detail: { type: 'string' }, status_code: { type: 'integer' }, type: { type: 'string', enum: Object.keys(REMOVEBG_ERRORS) } } };
/** The answer's headers (as every removal's, `removal-reply.ts`), and remove.bg's own. */
const HEADERS = {
  ...answerHeaderSchemas(),
  'x-credits-charged': { type: 'integer', description: 'Always 1: Cutout charges no credits, and each removal counts once in the token\'s Usage.' },
  'x-ratelimit-limit': { type: 'integer', description: 'Removals this Token ID may make per minute.' },
  'x-ratelimit-remaining': { type: 'integer' },
  'x-ratelimit-reset': { type: 'integer', description: 'Unix time (seconds) at which the window starts again.' },
  ...REQUEST_ID_HEADER,
};
const RETRY_AFTER = { 'retry-after': { type: 'integer', description: 'Seconds to wait before sending the request again.' } };
const errors = (schema: object) =>
  Object.fromEntries(
    [...new Set(Object.values(REMOVEBG_ERRORS).map((e) => e.status))].map((status) => [
      status,
      {
        description: Object.entries(REMOVEBG_ERRORS).filter(([, e]) => e.status === status).map(([code]) => `\`${code}\``).join(', '),
        headers: { ...REQUEST_ID_HEADER, ...(status === 429 || status === 503 ? RETRY_AFTER : {}) },
        content: { 'application/json': { schema } },
      },
    ]),
  );

export const compatOpenApi = {
  removebg: {
    summary: 'remove.bg-compatible: remove the background',
    description: 'remove.bg\'s `POST /v1.0/removebg`, keyed by a Token ID in X-Api-Key. The image\'s bytes, or `{"data": {"result_b64", …}}` with `Accept: application/json`.',
    tags: [API_TAG.compatibility],
    security,
    consumes: ['multipart/form-data', 'application/x-www-form-urlencoded', 'application/json'],
    body: BODY_SCHEMA,
    response: {
      200: {
        description: 'The result.',
        headers: HEADERS,
        content: { 'image/png': BINARY, 'image/jpeg': BINARY, 'image/webp': BINARY, 'application/zip': BINARY, 'application/json': { schema: RESULT_JSON } },
      },
      ...errors(REMOVEBG_ERROR),
    },
  },
  account: {
    summary: 'remove.bg-compatible: the key\'s account',
    description: 'remove.bg\'s shape. Cutout has no credits (all 0); `api.free_calls` is the per-minute rate limit; `cutout` holds the token\'s name, rate limit and removals in the last 30 days.',
    tags: [API_TAG.compatibility],
    security,
    response: {
      200: {
        description: 'The account.',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: { data: { type: 'object', properties: { attributes: { type: 'object', additionalProperties: true } } } },
            },
          },
        },
      },
      ...errors(REMOVEBG_ERROR),
    },
  },
  segment: {
    summary: 'Photoroom-compatible: remove the background',
    description: 'Photoroom\'s `POST /v1/segment`: multipart `image_file`; `format` png/jpg/webp, `channels`, `bg_color`, `size` preview/medium/hd/full, `crop`, `despill` (no effect). Answers the image\'s bytes.',
    tags: [API_TAG.compatibility],
    security,
    consumes: ['multipart/form-data'],
    body: {
      type: 'object',
      properties: { image_file: REMOVEBG_FIELDS.image_file, ...wireFields('photoroom') },
    },
    response: {
      200: { description: 'The result.', headers: HEADERS, content: { 'image/png': BINARY, 'image/jpeg': BINARY, 'image/webp': BINARY } },
      ...errors(PHOTOROOM_ERROR),
    },
  },
};
