import type { FastifyMultipartBaseOptions } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { CutoutError } from '../errors.js';

/** A multipart body read whole: its text fields by name, its files by part name. */
export interface FormParts {
  fields: Record<string, string>;
  files: Record<string, Buffer>;
}

/**
 * Reads a `multipart/form-data` body part by part, within the limits the route's multipart
 * plugin set. Files are kept only from the parts named in `fileParts`, one each; any other
 * file part is skipped (`others: 'skip'`, remove.bg's habit) or refused (`'refuse'`, the
 * native upload, which takes exactly its `file`). A body that breaks off or has no boundary is
 * 400 `invalid_request`; the plugin's size and count limits keep their own codes.
 *
 * @example const { fields, files } = await readFormParts(request, ['file'], 'refuse')
 */
export async function readFormParts(request: FastifyRequest, fileParts: readonly string[], others: 'skip' | 'refuse'): Promise<FormParts> {
  const fields: Record<string, string> = {};
  const files: Record<string, Buffer> = {};
  try {
    for await (const part of request.parts()) {
      if (part.type === 'field') {
        if (typeof part.value === 'string') fields[part.fieldname] = part.value;
        continue;
      }
      if (!fileParts.includes(part.fieldname)) {
        part.file.resume();
        if (others === 'skip') continue;
        throw new CutoutError('invalid_request', `The file part is named "${part.fieldname}"; it must be named ${fileParts.map((name) => `"${name}"`).join(' or ')}.`);
      }
      if (files[part.fieldname]) throw new CutoutError('invalid_request', `Send one file part named "${part.fieldname}", not several.`);
      files[part.fieldname] = await part.toBuffer().catch((error: unknown) => {
        // The plugin's message does not say which part was too large; a form may have two.
        if ((error as { code?: string }).code !== 'FST_REQ_FILE_TOO_LARGE') throw error;
        throw new CutoutError('payload_too_large', `${part.fieldname}: the file is larger than the byte limit.`, { cause: error });
      });
    }
  } catch (error) {
    // Size and count limits carry a Fastify code; busboy's own parse errors are plain Errors.
    if (error instanceof CutoutError || (error as { code?: string }).code) throw error;
    throw new CutoutError('invalid_request', 'The multipart body is malformed (a boundary is missing or the body ends inside a part).', { cause: error });
  }
  return { fields, files };
}

/**
 * The multipart plugin's options for a route whose form carries `optionCount` option fields
 * and up to `files` file parts: a part without a filename is still a file unless it is plain
 * text (busboy's default takes it for a file only when it is application/octet-stream).
 */
export function multipartLimits(maxFileBytes: number, optionCount: number, files: number, fieldBytes: number): FastifyMultipartBaseOptions {
  // The options, the photo's other fields (image_url, image_file_b64) and a few a client adds.
  const fields = optionCount + 8;
  return {
    isPartAFile: (_field: string | undefined, contentType: string | undefined, filename: string | undefined) => filename !== undefined || (contentType !== undefined && contentType !== 'text/plain'),
    limits: { fileSize: maxFileBytes, files, fields, parts: fields + files, fieldSize: fieldBytes, headerPairs: 100 },
  };
}
