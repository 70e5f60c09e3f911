import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import Type, { type Static } from 'typebox';
import { OPTION_FIELDS, takeOptions } from '../api/option-schemas.js';
import { CutoutError } from '../errors.js';

/** Images one job may list. */
export const MAX_JOB_ITEMS = 10_000;

declare module 'fastify' {
  interface FastifyRequest {
    /** A job request's output options as sent, and its body's hash, read before validation. */
    jobBody?: { options: Record<string, unknown>; hash: string };
  }
}

const Image = Type.Object({
  image_url: Type.String({ minLength: 1, maxLength: 8192, description: 'http(s) URL of the image; Cutout fetches it with the guards of the URL endpoint.' }),
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The client's own id for the image (a SKU): the result's file name in the zip." })),
});

/** The JSON body of a job of image URLs, once `readJobJson` has taken its output options out. */
export const JobBody = Type.Object({
  images: Type.Array(Image, { minItems: 1, maxItems: MAX_JOB_ITEMS, description: `The images, 1 to ${MAX_JOB_ITEMS}.` }),
  webhook_url: Type.Optional(Type.String({ pattern: '^https?://', maxLength: 2048, description: 'Where Cutout POSTs the job, signed, when it ends (docs/jobs.md, "Webhook"): held to the address rules of image URLs, checked now and at each delivery.' })),
  ...OPTION_FIELDS,
});
export type JobList = Static<typeof JobBody>;

/**
 * preValidation hook of a route that makes a job from JSON (the API's and the dashboard's):
 * refuses another Content-Type, hashes the body as sent and takes its output options out
 * (`request.jobBody`), so that the route's `JobBody` schema checks only the rest.
 */
export async function readJobJson(request: FastifyRequest): Promise<void> {
  if (!/^application\/json\b/i.test(request.headers['content-type'] ?? '')) throw new CutoutError('unsupported_media_type', 'Send the job as application/json.');
  const body = request.body;
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    const hash = bodyHash(body);
    // The client's own words, checked by the one option taker: the runner reads them again
    // with the same reader, rather than an internal form a later table could make stale.
    request.jobBody = { options: { ...takeOptions(body as Record<string, unknown>).sent }, hash };
  }
}

/** JSON with every object's keys sorted: the same request gives the same text, whatever its key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** SHA-256 of the body's canonical JSON: what tells a retry (same key, same body) from a new request. */
export const bodyHash = (body: unknown): string => createHash('sha256').update(canonicalJson(body)).digest('hex');

/** An `Idempotency-Key` header, checked: 1 to 255 visible ASCII characters, or none. */
export function readIdempotencyKey(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  const key = Array.isArray(header) ? header[0] : header;
  if (key === undefined || !/^[\x21-\x7e]{1,255}$/.test(key)) {
    throw new CutoutError('invalid_request', 'Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID, for one).');
  }
  return key;
}
