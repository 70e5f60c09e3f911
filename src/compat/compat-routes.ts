import formbody from '@fastify/formbody';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { decodeBase64Image } from '../api/base64-image.js';
import { CutoutError } from '../errors.js';
import { toCutoutError } from '../http/error-handler.js';
import { multipartLimits } from '../http/form-parts.js';
import { rateLimitPlugin } from '../http/rate-limit.js';
import { answerRemoval, type AnswerWire } from '../http/removal-reply.js';
import { optionsOf } from '../options/option-table.js';
import { OptionValueError } from '../options/option-value-error.js';
import { usageRecorderPlugin } from '../usage/usage-recorder.js';
import { removeBgJson } from './compat-answer.js';
import { readCompatBody } from './compat-body.js';
import { compatOpenApi } from './compat-openapi.js';
import { toRemoveBgError, type RemoveBgError } from './removebg-errors.js';
import { readRemoveBgRequest, readSegmentRequest, type CompatBody, type CompatRequest } from './removebg-request.js';

// Cutout charges no credits: each successful removal counts once in the token's Usage.
const CREDITS = { 'x-credits-charged': 1 };
/** remove.bg's answer: the image's bytes, or its JSON when Accept prefers application/json. */
const REMOVEBG_ANSWER: AnswerWire = { negotiation: 'image-unless-json', json: (result) => removeBgJson(result.bytes, result.foreground), headers: CREDITS };
/** Photoroom's answer: always the image's bytes. */
const PHOTOROOM_ANSWER: AnswerWire = { negotiation: 'image', headers: CREDITS };

/**
 * remove.bg's v1.0 API (`POST /v1.0/removebg`, `GET /v1.0/account`) and Photoroom's
 * `POST /v1/segment`, beside the native API and through the same pipeline, so that an
 * integration written for them changes only its host. The key is a user token's Token ID in
 * `X-Api-Key`, with the native API's revocation, expiry, per-token rate limit and usage
 * counting. Errors are remove.bg's `{"errors": [{"title", "code", "detail"}]}` (Photoroom's
 * `{"detail", "status_code", "type"}` on its route), never the native problem+json.
 * Off with CUTOUT_COMPAT_API=false.
 */
export async function compatRoutes(app: FastifyInstance): Promise<void> {
  const { config } = app;
  if (!config.compatApi) return;

  // An unknown path or method under a compatible prefix is answered in that API's error body.
  for (const [prefix, shape] of [['/v1.0', 'removebg'], ['/v1', 'photoroom']] as const) {
    await app.register(
      async (scope) => {
        scope.setNotFoundHandler((request, reply) => sendCompatError(request, reply, new CutoutError('not_found', `No endpoint ${request.method} ${request.url.split('?')[0]}.`), shape));
      },
      { prefix },
    );
  }

  await app.register(async (scope) => {
    scope.setErrorHandler((error, request, reply) => sendCompatError(request, reply, error, 'removebg'));
    scope.addHook('onRequest', async (request) => {
      const key = request.headers['x-api-key'];
      request.managedToken = await app.tokens.verifyTokenId(Array.isArray(key) ? key[0] : key);
    });

    scope.get('/v1.0/account', { schema: compatOpenApi.account }, async (request) => {
      const token = request.managedToken!;
      const since = new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10);
      // The store counts usage per account; an installation has one account, or a few.
      const usage = (await Promise.all((await app.store.listAccounts()).map((account) => app.store.listDailyUsage(account.id, since)))).flat();
      const removals = usage.filter((day) => day.userTokenId === token.userTokenId).reduce((sum, day) => sum + day.succeeded, 0);
      return {
        data: {
          attributes: {
            credits: { total: 0, subscription: 0, payg: 0, enterprise: 0 },
            api: { free_calls: config.rateLimit, sizes: 'all' },
            cutout: { token_name: token.userToken.name, rate_limit_per_minute: config.rateLimit, removals_last_30_days: removals },
          },
        },
      };
    });

    await scope.register(async (removals) => {
      // image_file_b64 may come as a form field: as large as a Base64 image.
      await removals.register(multipart, multipartLimits(config.maxImageBytes, optionsOf('removebg').length, 4, Math.ceil((config.maxImageBytes * 4) / 3) + 1024));
      await removals.register(formbody, { bodyLimit: Math.ceil((config.maxImageBytes * 4) / 3) + 64 * 1024 });
      removals.addHook('onRequest', async () => app.removals.assertCapacity());
      await removals.register(rateLimitPlugin);
      await removals.register(usageRecorderPlugin);
      removals.addHook('onSend', async (_request, reply) => copyRateLimitHeaders(reply));

      const remove = async (request: FastifyRequest, reply: FastifyReply, read: (body: CompatBody) => CompatRequest, wire: AnswerWire) => {
        const compat = read(await readCompatBody(request));
        // Before the photo is fetched or anything waits: a background URL refused as written.
        const background = compat.background;
        if (background?.kind === 'url') refuseOr(() => app.removals.checkUrl(background.url, 'bg_image_url'), 'failed_bg_download');
        const signal = app.removals.signalFor(reply);
        const backgroundImage =
          compat.background?.kind === 'file'
            ? compat.background.bytes
            : compat.background && fetchOr(app.removals.fetch(compat.background.url, 'bg_image_url', signal), 'failed_bg_download');
        backgroundImage instanceof Promise && backgroundImage.catch(() => {});
        const photo = await photoBytes(app, compat, signal);
        if (photo.length === 0) throw new OptionValueError('failed_to_read_image', 'The image is empty (0 bytes).');
        return answerRemoval(app, request, reply, { photo, signal, removal: { ...compat.removal, backgroundImage } }, wire);
      };

      removals.post('/v1.0/removebg', { schema: compatOpenApi.removebg, validatorCompiler: () => () => true }, async (request, reply) =>
        remove(request, reply, readRemoveBgRequest, REMOVEBG_ANSWER),
      );

      removals.post(
        '/v1/segment',
        { schema: compatOpenApi.segment, validatorCompiler: () => () => true, errorHandler: (error, request, reply) => sendCompatError(request, reply, error, 'photoroom') },
        async (request, reply) => remove(request, reply, readSegmentRequest, PHOTOROOM_ANSWER),
      );
    });
  });
}

/** The photo's bytes from its source; a URL is fetched with the native guards and limits. */
async function photoBytes(app: FastifyInstance, compat: CompatRequest, signal: AbortSignal): Promise<Uint8Array> {
  const { source } = compat;
  if (source.kind === 'file') return source.bytes;
  if (source.kind === 'base64') {
    try {
      return decodeBase64Image(source.text, app.config.maxImageBytes);
    } catch (error) {
      if (error instanceof CutoutError && error.code === 'invalid_base64') throw new OptionValueError('failed_to_read_image', `image_file_b64: ${error.message}`);
      throw error;
    }
  }
  return fetchOr(app.removals.fetch(source.url, 'image_url', signal), 'failed_image_download');
}

type DownloadCode = 'failed_image_download' | 'failed_bg_download';

/** A fetch whose refusal or failure (bad address, HTTP error, timeout) is remove.bg's download error; its size limit stays file_too_large. */
function fetchOr(fetching: Promise<Uint8Array>, code: DownloadCode): Promise<Uint8Array> {
  return fetching.catch((error: unknown) => {
    throw asDownloadError(error, code);
  });
}

/** Runs a check of a URL, its refusal as remove.bg's download error. */
function refuseOr(check: () => void, code: DownloadCode): void {
  try {
    check();
  } catch (error) {
    throw asDownloadError(error, code);
  }
}

function asDownloadError(error: unknown, code: DownloadCode): unknown {
  if (error instanceof CutoutError && ['url_not_allowed', 'upstream_fetch_failed', 'upstream_timeout', 'invalid_request'].includes(error.code)) {
    return new OptionValueError(code, error.message, { cause: error });
  }
  return error;
}

/**
 * remove.bg's rate-limit headers from the native ones (the IETF draft's `RateLimit-*`):
 * `X-RateLimit-Limit`, `X-RateLimit-Remaining`, and `X-RateLimit-Reset` as a Unix time in
 * seconds, as remove.bg's clients read it.
 */
function copyRateLimitHeaders(reply: FastifyReply): void {
  const limit = reply.getHeader('ratelimit-limit');
  if (limit === undefined) return;
  const reset = Number(reply.getHeader('ratelimit-reset') ?? 0);
  reply.header('x-ratelimit-limit', limit);
  reply.header('x-ratelimit-remaining', reply.getHeader('ratelimit-remaining') ?? 0);
  reply.header('x-ratelimit-reset', Math.ceil(Date.now() / 1000) + (Number.isFinite(reset) ? reset : 0));
}

/** Sends any error of a compatible route in the shape its clients read. */
function sendCompatError(request: FastifyRequest, reply: FastifyReply, thrown: unknown, shape: 'removebg' | 'photoroom'): FastifyReply {
  const native = toCutoutError(thrown);
  const error: RemoveBgError = toRemoveBgError(native);
  reply.problemCode = native.code;
  if (error.status >= 500 && native.code === 'internal_error') request.log.error({ err: thrown }, 'request failed');
  else request.log.info({ code: error.code, detail: error.detail }, 'request refused');
  if (error.status === 429) copyRateLimitHeaders(reply);
  reply.code(error.status).headers(error.headers).type('application/json; charset=utf-8');
  if (shape === 'photoroom') return reply.send({ detail: error.detail, status_code: error.status, type: error.code });
  return reply.send({ errors: [{ title: error.title, code: error.code, detail: error.detail }] });
}
