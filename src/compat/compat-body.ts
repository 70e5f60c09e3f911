import type { FastifyRequest } from 'fastify';
import { CutoutError } from '../errors.js';
import { readFormParts } from '../http/form-parts.js';
import type { CompatBody } from './removebg-request.js';

/**
 * A compatible route's body as fields and files, from `multipart/form-data` (files by part
 * name, an empty file part being no file, as remove.bg's CLI may send one), from
 * `application/x-www-form-urlencoded` or from `application/json` (an object). Anything else
 * is 415 `unsupported_media_type`.
 *
 * @example const { fields, files } = await readCompatBody(request)
 */
export async function readCompatBody(request: FastifyRequest): Promise<CompatBody> {
  if (request.isMultipart()) {
    const { fields, files } = await readFormParts(request, ['image_file', 'bg_image_file'], 'skip');
    // An empty file part is no file, as remove.bg's CLI may send one.
    return { fields, files: Object.fromEntries(Object.entries(files).filter(([, bytes]) => bytes.length > 0)) };
  }
  const type = request.headers['content-type'] ?? '';
  const body = request.body;
  if (/^(application\/json|application\/x-www-form-urlencoded)\b/i.test(type)) {
    if (body === undefined || body === null) return { fields: {}, files: {} };
    if (typeof body === 'object' && !Array.isArray(body)) return { fields: body as Record<string, unknown>, files: {} };
    throw new CutoutError('invalid_request', 'The JSON body must be an object of parameters.');
  }
  throw new CutoutError('unsupported_media_type', 'Send multipart/form-data, application/x-www-form-urlencoded or application/json.');
}
