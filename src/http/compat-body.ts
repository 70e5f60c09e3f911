import type { FastifyRequest } from 'fastify';
import type { CompatBody } from '../compat/removebg-request.js';
import { CutoutError } from '../errors.js';

/** The file parts the compatible routes take; any other file part is skipped. */
const FILE_PARTS = new Set(['image_file', 'bg_image_file']);

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
    const fields: Record<string, string> = {};
    const files: Record<string, Uint8Array> = {};
    try {
      for await (const part of request.parts()) {
        if (part.type === 'field') {
          if (typeof part.value === 'string') fields[part.fieldname] = part.value;
        } else if (!FILE_PARTS.has(part.fieldname)) {
          part.file.resume();
        } else {
          if (files[part.fieldname]) throw new CutoutError('invalid_request', `Send one file part named ${part.fieldname}, not several.`);
          const bytes = await part.toBuffer();
          if (bytes.length > 0) files[part.fieldname] = bytes;
        }
      }
    } catch (error) {
      if (error instanceof CutoutError || (error as { code?: string }).code) throw error;
      throw new CutoutError('invalid_request', 'The multipart body is malformed (a boundary is missing or the body ends inside a part).', { cause: error });
    }
    return { fields, files };
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
