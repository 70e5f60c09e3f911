import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { CutoutError, renderProblem, type ErrorCode } from '../errors.js';
import { StoreUnavailableError } from '../store/store-unavailable.js';

/**
 * Seconds a client is asked to wait when the database cannot be reached: about what a
 * PostgreSQL restart or a failover takes (docs/deployment.md).
 */
const STORE_RETRY_AFTER_SECONDS = 5;

/** Fastify's and its plugins' own error codes, and what each means to a Cutout client. */
const FRAMEWORK_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'malformed_json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'malformed_json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_REQ_FILE_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_INVALID_MULTIPART_CONTENT_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_PARTS_LIMIT: 'invalid_request',
  FST_FILES_LIMIT: 'invalid_request',
  FST_FIELDS_LIMIT: 'invalid_request',
  FST_PROTO_VIOLATION: 'invalid_request',
  FST_MP_PREMATURE_CLOSE: 'invalid_request',
};

/** Turns anything thrown while handling a request into a CutoutError. */
export function toCutoutError(error: unknown): CutoutError {
  if (error instanceof CutoutError) return error;
  if (error instanceof StoreUnavailableError) {
    return new CutoutError('store_unavailable', undefined, { cause: error, headers: { 'retry-after': String(STORE_RETRY_AFTER_SECONDS) } });
  }
  const fastifyError = error as Partial<FastifyError>;
  if (fastifyError.validation) {
    return new CutoutError('invalid_request', fastifyError.message, { cause: error });
  }
  const mapped = fastifyError.code && FRAMEWORK_CODES[fastifyError.code];
  if (mapped) return new CutoutError(mapped, fastifyError.message, { cause: error });
  const status = fastifyError.statusCode ?? 500;
  if (status === 404) return new CutoutError('not_found', undefined, { cause: error });
  if (status >= 400 && status < 500) return new CutoutError('invalid_request', fastifyError.message, { cause: error });
  return new CutoutError('internal_error', undefined, { cause: error });
}

declare module 'fastify' {
  interface FastifyReply {
    /** The registered code of the problem this reply sent, if it sent one (for the metrics). */
    problemCode?: ErrorCode;
  }
}

/** Sends a problem+json body for `error`, with its headers and the request id. */
export function sendProblem(request: FastifyRequest, reply: FastifyReply, error: CutoutError): FastifyReply {
  reply.problemCode = error.code;
  return reply
    .code(error.status)
    .headers(error.headers)
    .type('application/problem+json')
    .send(renderProblem(error, request.id));
}

/**
 * The one renderer: every error, and every unknown route, becomes an RFC 9457 problem with
 * a registered `code`. 5xx causes are logged with their stack; nothing internal is sent.
 */
export const errorHandlerPlugin = fp(
  async (app) => {
    app.decorateReply('problemCode', undefined);
    app.setErrorHandler((error, request, reply) => {
      const problem = toCutoutError(error);
      if (error instanceof StoreUnavailableError) {
        // Every request says it while the database is away: the driver's message, not a stack each time.
        request.log.warn({ code: problem.code, cause: String(error.cause) }, 'request refused: the database cannot be reached');
      } else if (problem.status >= 500 && problem.code !== 'queue_full' && problem.code !== 'over_memory_budget' && problem.code !== 'not_ready') {
        request.log.error({ err: error }, 'request failed');
      } else {
        request.log.info({ code: problem.code, detail: problem.message }, 'request refused');
      }
      return sendProblem(request, reply, problem);
    });
    app.setNotFoundHandler((request, reply) => sendProblem(request, reply, new CutoutError('not_found', `No endpoint ${request.method} ${request.url.split('?')[0]}.`)));
  },
  { name: 'cutout-error-handler' },
);
