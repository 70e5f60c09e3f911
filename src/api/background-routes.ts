import multipart from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { CutoutError } from '../errors.js';
import { API_TAG } from '../http/openapi-document.js';
import { ANSWER_HEADERS, problemResponses } from '../http/openapi-schemas.js';
import { multipartLimits, readFormParts } from '../http/form-parts.js';
import { rateLimitPlugin } from '../http/rate-limit.js';
import { answerRemoval, NATIVE_ANSWER } from '../http/removal-reply.js';
import { NO_OPTIONS, type OutputOptions } from '../options/output-options.js';
import { readOptions } from '../options/read-options.js';
import { usageRecorderPlugin } from '../usage/usage-recorder.js';
import { decodeBase64Image } from './base64-image.js';
import { NATIVE_OPTION_COUNT, OPTION_FIELDS, OPTION_FORM_FIELDS, takeOptions } from './option-schemas.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** A background request's output options, read from its JSON body before validation. */
    outputOptions?: OutputOptions;
  }
}

const Cutout = Type.Object({ image_base64: Type.String({ description: 'Standard Base64 of the result image (a transparent PNG unless the options ask for another).' }) });
const UrlBody = Type.Object({ image_url: Type.String({ minLength: 1, maxLength: 8192, description: 'http(s) URL of the image; Cutout fetches it.' }), ...OPTION_FIELDS });
// No `minLength` on image_base64: Ajv checks it by walking the whole string for surrogate
// pairs, milliseconds of the event loop per photo (docs/internals/performance.md); decodeBase64Image
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
  ...problemResponses([400, 401, 408, 413, 415, 422, 429, 431, 500, 502, 503, 504]),
};

/**
 * The three background endpoints of the specification. Each takes one image and the output
 * options, runs the pipeline and answers `{ image_base64 }`, or the image's bytes when Accept
 * asks for them (`src/http/answer-negotiation.ts`). The managed token, the model's readiness and the queue
 * are checked on request, before the body is read.
 */
export const backgroundRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app;
  await app.register(multipart, multipartLimits(config.maxImageBytes, NATIVE_OPTION_COUNT, 2, 64 * 1024));

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
    if (body && typeof body === 'object' && !Array.isArray(body)) request.outputOptions = takeOptions(body as Record<string, unknown>);
  };

  const cutout = async (photo: Uint8Array, request: FastifyRequest, reply: FastifyReply, signal: AbortSignal, options: OutputOptions = NO_OPTIONS) => {
    if (photo.length === 0) throw new CutoutError('invalid_request', 'The image is empty (0 bytes).');
    return answerRemoval(app, request, reply, { photo, signal, removal: { options } }, NATIVE_ANSWER);
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
      const { fields, files } = await readFormParts(request, ['file'], 'refuse');
      const options = readOptions(fields, 'native');
      const file = files.file;
      if (!file) throw new CutoutError('invalid_request', 'The form has no file part named "file".');
      return cutout(file, request, reply, app.removals.signalFor(reply), options);
    },
  );
};
