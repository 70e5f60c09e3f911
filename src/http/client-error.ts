import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { CutoutError, renderProblem } from '../errors.js';

/**
 * Fastify's `clientErrorHandler`: the answer to a request Node's HTTP parser refused before
 * Fastify saw it, so before any route, hook or error handler: headers past Node's limit
 * (`--max-http-header-size`, 16 KiB by default) are 431 `headers_too_large`, bytes that are
 * not HTTP/1.1 400 `invalid_request`, each in the problem shape of every other refusal, with
 * a request id made here (there is no request to carry one), and one whose headers did not
 * arrive within Node's `headersTimeout` (60 s) 408 `request_timeout`. The
 * connection is closed after the answer, as Node and Fastify do.
 *
 * @example Fastify({ clientErrorHandler: answerClientError })
 */
export function answerClientError(this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
  // The peer is gone: there is nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const problem =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new CutoutError('headers_too_large', `The request's headers are larger than this server's limit of ${http.maxHeaderSize} bytes.`, { cause: error })
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new CutoutError('request_timeout', 'The request did not arrive in full in time; send it again.', { cause: error })
        : new CutoutError('invalid_request', 'The request is not valid HTTP/1.1.', { cause: error });
  const requestId = randomUUID();
  this.log.info({ code: problem.code, reqId: requestId, cause: error.code }, 'request refused by the HTTP parser');
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(renderProblem(problem, requestId));
  socket.end(
    `HTTP/1.1 ${problem.status} ${http.STATUS_CODES[problem.status]}\r\n` +
      `Content-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
  );
}
