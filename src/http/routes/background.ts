import multipart from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { CutoutError } from '../../errors.js';
import { fetchImage } from '../../fetch/fetch-image.js';
import { untilAborted } from '../../removal/removal-service.js';
import { usageRecorderPlugin } from '../../usage/usage-recorder.js';
import { decodeBase64Image } from '../base64-image.js';
import { cutoutJson } from '../cutout-json.js';
import { rateLimitPlugin } from '../rate-limit.js';

const Cutout = Type.Object({ image_base64: Type.String({ description: 'Standard Base64 of the PNG with a transparent background.' }) });
const Refine = Type.Optional(
  Type.Boolean({ description: 'Refine the edges and their colours (default: the server\'s CUTOUT_REFINE, normally true); false returns the model\'s mask stretched as it is.' }),
);
const UrlBody = Type.Object({ image_url: Type.String({ minLength: 1, maxLength: 8192, description: 'http(s) URL of the image; Cutout fetches it.' }), refine: Refine });
// No `minLength` on image_base64: Ajv checks it by walking the whole string for surrogate
// pairs, milliseconds of the event loop per photo (docs/benchmarks.md); decodeBase64Image
// refuses an empty image with the same 400 invalid_request.
const Base64Body = Type.Object({ image_base64: Type.String({ description: 'Standard Base64 of the image, not empty (a data: URL prefix is accepted).' }), refine: Refine });
const security = [{ managedToken: [] }];

/**
 * The three background endpoints of the specification. Each takes one image, runs the
 * pipeline and answers `{ image_base64 }`. The managed token, the model's readiness and the
 * queue are checked on request, before the body is read.
 */
export const backgroundRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config } = app;
  await app.register(multipart, {
    // A part without a filename is still the image unless it is plain text (busboy's
    // default takes it for a file only when it is application/octet-stream).
    isPartAFile: (_field, contentType, filename) => filename !== undefined || (contentType !== undefined && contentType !== 'text/plain'),
    limits: { fileSize: config.maxImageBytes, files: 2, fields: 10, parts: 12, fieldSize: 64 * 1024, headerPairs: 100 },
  });

  app.addHook('onRequest', async (request) => {
    await app.requireManagedToken(request);
    app.removals.assertCapacity();
  });
  await app.register(rateLimitPlugin);
  await app.register(usageRecorderPlugin);

  // JSON endpoints refuse other bodies with 415 rather than a confusing "body must be object".
  const requireJson = async (request: FastifyRequest) => {
    if (!/^application\/json\b/i.test(request.headers['content-type'] ?? '')) {
      throw new CutoutError('unsupported_media_type', 'Send the body as application/json.');
    }
  };

  const signalFor = (reply: FastifyReply) => app.removals.signalFor(reply);

  const cutout = async (bytes: Uint8Array, reply: FastifyReply, signal: AbortSignal, refine?: boolean) => {
    if (bytes.length === 0) throw new CutoutError('invalid_request', 'The image is empty (0 bytes).');
    const { bytes: png, timings, width, height } = await app.removals.remove(bytes, signal, { refine });
    reply.request.inputMegapixels = (width * height) / 1e6;
    reply.header('server-timing', Object.entries(timings).map(([stage, ms]) => `${stage};dur=${ms.toFixed(1)}`).join(', '));
    return reply.type('application/json; charset=utf-8').send(cutoutJson(png));
  };

  app.post(
    '/api/v1/background/remove/url',
    { preValidation: requireJson, schema: { summary: 'Remove the background of an image at a URL', security, body: UrlBody, response: { 200: Cutout } } },
    async (request, reply) => {
      const signal = signalFor(reply);
      const fetching = fetchImage(request.body.image_url, {
        timeoutMs: config.urlTimeoutMs,
        maxBytes: config.maxImageBytes,
        maxRedirects: config.urlMaxRedirects,
        allowPrivate: config.urlAllowPrivate,
        allowHosts: config.urlAllowHosts,
        denyHosts: config.urlDenyHosts,
        signal,
      });
      return cutout(await untilAborted(fetching, signal), reply, signal, request.body.refine);
    },
  );

  app.post(
    '/api/v1/background/remove/base64',
    { preValidation: requireJson, schema: { summary: 'Remove the background of a Base64 image', security, body: Base64Body, response: { 200: Cutout } } },
    async (request, reply) => cutout(decodeBase64Image(request.body.image_base64, config.maxImageBytes), reply, signalFor(reply), request.body.refine),
  );

  app.post(
    '/api/v1/background/remove/multipart',
    {
      schema: {
        summary: 'Remove the background of an uploaded image',
        description: 'multipart/form-data with exactly one file part named `file`, and optionally a field `refine` (`true` or `false`).',
        security,
        consumes: ['multipart/form-data'],
        response: { 200: Cutout },
      },
    },
    async (request, reply) => {
      if (!request.isMultipart()) throw new CutoutError('unsupported_media_type', 'Send multipart/form-data with a file part named `file`.');
      let file: Buffer | undefined;
      let refine: boolean | undefined;
      try {
        for await (const part of request.parts()) {
          if (part.type === 'field') {
            if (part.fieldname === 'refine') refine = parseRefineField(part.value);
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
      if (!file) throw new CutoutError('invalid_request', 'The form has no file part named "file".');
      return cutout(file, reply, signalFor(reply), refine);
    },
  );
};

/** The multipart `refine` field: `true` or `false` (any case), as a JSON body would have it. */
function parseRefineField(value: unknown): boolean {
  const text = typeof value === 'string' ? value.trim().toLowerCase() : '';
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw new CutoutError('invalid_request', `The form field "refine" must be true or false, not ${JSON.stringify(String(value)).slice(0, 40)}.`);
}
