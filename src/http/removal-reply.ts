import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ENCODED_TYPES } from '../pipeline/answer-spec.js';
import type { RemovalRequest, RemovalResult } from '../removal/removal-service.js';
import { chooseAnswer, type Negotiation } from './answer-negotiation.js';
import { cutoutJson } from './cutout-json.js';

/** How one wire answers a removal: when it sends JSON, which JSON, and its own extra headers. */
export interface AnswerWire {
  negotiation: Negotiation;
  /** The JSON body, when the negotiation chose JSON; default the specification's `{"image_base64"}`. */
  json?: (result: RemovalResult) => Buffer | string;
  /** Headers only this wire sends (remove.bg's `X-Credits-Charged`). */
  headers?: Readonly<Record<string, string | number>>;
}

/** The specification's wire: `{"image_base64"}` unless Accept prefers an image type. */
export const NATIVE_ANSWER: AnswerWire = { negotiation: 'json-unless-image' };

/**
 * The one way a removal becomes a reply, for every route that makes one (the native
 * endpoints, remove.bg's and Photoroom's routes, try-it): it negotiates JSON or bytes and the
 * format from Accept and the options, runs the removal, records what the metrics and the
 * usage read (`request.removalTimings`, `request.inputMegapixels`), sets the answer headers
 * (`X-Width`, `X-Height`, `X-Uncertainty`, `X-Looks`, `X-Model`, `X-Foreground-*`, `Server-Timing`) and
 * sends the body in the wire's shape.
 *
 * @example return answerRemoval(app, request, reply, { photo, signal, removal: { options } }, NATIVE_ANSWER)
 */
export async function answerRemoval(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  work: { photo: Uint8Array; signal: AbortSignal; removal: RemovalRequest },
  wire: AnswerWire,
): Promise<FastifyReply> {
  const { raw, format } = chooseAnswer(request.headers.accept, work.removal.options?.format, wire.negotiation);
  const result = await app.removals.remove(work.photo, work.signal, { ...work.removal, format, base64Answer: !raw });
  request.inputMegapixels = (result.input.width * result.input.height) / 1e6;
  request.removalTimings = { ...result.timings, model: result.model, looks: result.looks };
  reply.header('server-timing', Object.entries(result.timings).map(([stage, ms]) => `${stage};dur=${ms.toFixed(1)}`).join(', '));
  reply.headers({ 'x-width': result.width, 'x-height': result.height, 'x-uncertainty': result.uncertainty.toFixed(3), 'x-looks': result.looks, 'x-model': result.model });
  if (result.foreground) {
    const { top, left, width, height } = result.foreground;
    reply.headers({ 'x-foreground-top': top, 'x-foreground-left': left, 'x-foreground-width': width, 'x-foreground-height': height });
  }
  if (wire.headers) reply.headers(wire.headers);
  if (raw) return reply.type(ENCODED_TYPES[result.format]).send(result.bytes);
  return reply.type('application/json; charset=utf-8').send((wire.json ?? ((r: RemovalResult) => cutoutJson(r.bytes)))(result));
}
