import multipart from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { CutoutError } from '../../errors.js';
import { ENCODED_TYPES } from '../../pipeline/answer-spec.js';
import { NO_OPTIONS, parseOutputOptions, type OutputOptions } from '../../removal/output-options.js';
import { usageRecorderPlugin } from '../../usage/usage-recorder.js';
import { chooseAnswer } from '../answer-format.js';
import { decodeBase64Image } from '../base64-image.js';
import { cutoutJson } from '../cutout-json.js';
import { API_TAG } from '../openapi-document.js';
import { ANSWER_HEADERS, problemResponses } from '../openapi-schemas.js';
import { rateLimitPlugin } from '../rate-limit.js';
import { OPTION_FIELDS, OPTION_FORM_FIELDS } from './option-fields.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** A background request's output options, read from its JSON body before validation. */
    outputOptions?: OutputOptions;
  }
}

const Cutout = Type.Object({ image_base64: Type.String({ description: 'Standard Base64 of the result image (a transparent PNG unless the options ask for another).' }) });
const UrlBody = Type.Object({ image_url: Type.String({ minLength: 1, maxLength: 8192, description: 'http(s) URL of the image; Cutout fetches it.' }), ...OPTION_FIELDS });
// No `minLength` on image_base64: Ajv checks it by walking the whole string for surrogate
// pairs, milliseconds of the event loop per photo (docs/benchmarks.md); decodeBase64Image
// refuses an empty image with the same 400 invalid_request.
const Base64Body = Type.Object({ image_base64: Type.String({ description: 'Standard Base64 of the image, not empty (a data: URL prefix is accepted).' }), ...OPTION_FIELDS });
const UploadBody = Type.Object({ file: Type.String({ format: 'binary', description: 'The image, exactly one file part.' }), ...OPTION_FORM_FIELDS }, { required: ['file'] });
const security = [{ managedToken: [] }];
const IMAGE = { schema: { type: 'string', format: 'binary' } };
const ANSWER = {
  200: {
    description: 'The result. JSON `{"image_base64"}` unless Accept asks for image/png, image/webp, image/jpeg or image/*: then the bytes themselves.',
    headers: ANSWER_HEADERS,
    content: { 'application/json': { schema: Cutout }, 'image/png': IMAGE, 'image/webp': IMAGE, 'image/jpeg': IMAGE },
  },
  ...problemResponses([400, 401, 413, 415, 422, 429, 500, 502, 503, 504]),
};

/**
 * The three background endpoints of the specification. Each takes one image and the output
 * options, runs the pipeline and answers `{ image_base64 }`, or the image's bytes when Accept
 * asks for them (`answer-format.ts`). The managed token, the model's readiness and the queue
 * are checked on request, before the body is read.
 */
export const backgroundRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app;
  await app.register(multipart, {
    // A part without a filename is still the image unless it is plain text (busboy's
    // default takes it for a file only when it is application/octet-stream).
    isPartAFile: (_field, contentType, filename) => filename !== undefined || (contentType !== undefined && contentType !== 'text/plain'),
    limits: { fileSize: config.maxImageBytes, files: 2, fields: 20, parts: 22, fieldSize: 64 * 1024, headerPairs: 100 },
  });

  app.addHook('onRequest', async (request) => {
    await app.requireManagedToken(request);
    app.removals.assertCapacity();
  });
  await app.register(rateLimitPlugin);
  await app.register(usageRecorderPlugin);

  // JSON endpoints refuse other bodies with 415 rather than a confusing "body must be object",
  // and read their options before the schema is checked, so that a bad value is told in words.
  const readJson = async (request: FastifyRequest) => {
    if (!/^application\/json\b/i.test(request.headers['content-type'] ?? '')) {
      throw new CutoutError('unsupported_media_type', 'Send the body as application/json.');
    }
    const body = request.body;
    if (body && typeof body === 'object' && !Array.isArray(body)) request.outputOptions = parseOutputOptions(body as Record<string, unknown>, 'json');
  };

  const cutout = async (bytes: Uint8Array, request: FastifyRequest, reply: FastifyReply, signal: AbortSignal, options: OutputOptions = NO_OPTIONS) => {
    if (bytes.length === 0) throw new CutoutError('invalid_request', 'The image is empty (0 bytes).');
    const { raw, format } = chooseAnswer(request.headers.accept, options.format);
    const answer = await app.removals.remove(bytes, signal, { options, format });
    request.inputMegapixels = (answer.input.width * answer.input.height) / 1e6;
    request.removalTimings = { ...answer.timings, model: answer.model };
    reply.header('server-timing', Object.entries(answer.timings).map(([stage, ms]) => `${stage};dur=${ms.toFixed(1)}`).join(', '));
    reply.header('x-width', answer.width).header('x-height', answer.height).header('x-uncertainty', answer.uncertainty.toFixed(3)).header('x-model', answer.model);
    if (answer.foreground) {
      const { top, left, width, height } = answer.foreground;
      reply.headers({ 'x-foreground-top': top, 'x-foreground-left': left, 'x-foreground-width': width, 'x-foreground-height': height });
    }
    if (raw) return reply.type(ENCODED_TYPES[answer.format]).send(answer.bytes);
    return reply.type('application/json; charset=utf-8').send(cutoutJson(answer.bytes));
  };

  app.post(
    '/api/v1/background/remove/url',
    { preValidation: readJson, schema: { summary: 'Remove the background of an image at a URL', tags: [API_TAG.removal], security, body: UrlBody, response: ANSWER } },
    async (request, reply) => {
      const signal = app.removals.signalFor(reply);
      const bytes = await app.removals.fetch(request.body.image_url, 'image_url', signal);
      return cutout(bytes, request, reply, signal, request.outputOptions);
    },
  );

  app.post(
    '/api/v1/background/remove/base64',
    { preValidation: readJson, schema: { summary: 'Remove the background of a Base64 image', tags: [API_TAG.removal], security, body: Base64Body, response: ANSWER } },
    async (request, reply) => cutout(decodeBase64Image(request.body.image_base64, config.maxImageBytes), request, reply, app.removals.signalFor(reply), request.outputOptions),
  );

  app.post(
    '/api/v1/background/remove/multipart',
    {
      // The body is read by the handler, part by part; the schema only describes it.
      validatorCompiler: () => () => true,
      schema: {
        summary: 'Remove the background of an uploaded image',
        description: 'multipart/form-data with exactly one file part named `file`, and the output options as form fields.',
        tags: [API_TAG.removal],
        security,
        consumes: ['multipart/form-data'],
        body: UploadBody,
        response: ANSWER,
      },
    },
    async (request, reply) => {
      if (!request.isMultipart()) throw new CutoutError('unsupported_media_type', 'Send multipart/form-data with a file part named `file`.');
      let file: Buffer | undefined;
      const fields: Record<string, string> = {};
      try {
        for await (const part of request.parts()) {
          if (part.type === 'field') {
            if (typeof part.value === 'string') fields[part.fieldname] = part.value;
            continue;
          }
          if (part.fieldname !== 'file') {
            part.file.resume();
            throw new CutoutError('invalid_request', `The file part is named "${part.fieldname}"; it must be named "file".`);
          }
          if (file) throw new CutoutError('invalid_request', 'Send exactly one file part named "file".');
          file = await part.toBuffer();
        }
      } catch (error) {
        // Size and count limits carry a Fastify code; busboy's own parse errors are plain Errors.
        if (error instanceof CutoutError || (error as { code?: string }).code) throw error;
        throw new CutoutError('invalid_request', 'The multipart body is malformed (a boundary is missing or the body ends inside a part).', { cause: error });
      }
      const options = parseOutputOptions(fields, 'form');
      if (!file) throw new CutoutError('invalid_request', 'The form has no file part named "file".');
      return cutout(file, request, reply, app.removals.signalFor(reply), options);
    },
  );
};
