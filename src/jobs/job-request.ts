import { createHash } from 'node:crypto';
import { CutoutError } from '../errors.js';
import { optionsOf } from '../options/option-table.js';
import { isSet, readOptions } from '../options/read-options.js';

/** Images one job may list. */
export const MAX_JOB_ITEMS = 10_000;

const NATIVE_OPTIONS = optionsOf('native');

/**
 * Checks a job's output options with the option table, exactly as the removal endpoints do
 * (a bad value is the same 400), and takes them out of the body so that its schema checks
 * only the rest. Returns the options as sent: the job keeps the client's words, which the
 * runner reads again with the same reader, rather than an internal form that a later change
 * of the table could make stale.
 *
 * @example const options = takeJobOptions(body) // { format: 'webp', crop: true }
 */
export function takeJobOptions(body: Record<string, unknown>): Record<string, unknown> {
  readOptions(body, 'native');
  const sent: Record<string, unknown> = {};
  for (const name of NATIVE_OPTIONS) {
    if (isSet(body[name])) sent[name] = body[name];
    delete body[name];
  }
  return sent;
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
