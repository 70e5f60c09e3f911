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

/** One header of every removal's answer: its schema and description (OpenAPI), and its value for a result (absent: not sent). */
interface AnswerHeader {
  type: 'integer' | 'number' | 'string';
  minimum?: number;
  maximum?: number;
  description: string;
  value: (result: RemovalResult) => string | number | undefined;
}

/**
 * The headers every route that removes a background sends with its answer, declared once:
 * `answerRemoval` sets them, the native and the compatible OpenAPI documents describe them
 * (`answerHeaderSchemas`).
 */
const ANSWER_HEADERS: Readonly<Record<string, AnswerHeader>> = {
  'x-width': { type: 'integer', description: "The result's width in pixels (after crop, max_width/max_height and size).", value: (r) => r.width },
  'x-height': { type: 'integer', description: "The result's height in pixels.", value: (r) => r.height },
  'x-model': { type: 'string', description: "The model that cut: the request's `model`, or the server's default (the first of its CUTOUT_MODELS).", value: (r) => r.model },
  'x-foreground-top': {
    type: 'integer',
    description: "Top of the subject's box in the input's (EXIF-oriented) pixels; the four x-foreground-* headers are absent when the model found no subject.",
    value: (r) => r.foreground?.top,
  },
  'x-foreground-left': { type: 'integer', description: "Left of the subject's box in the input's pixels.", value: (r) => r.foreground?.left },
  'x-foreground-width': { type: 'integer', description: "Width of the subject's box in the input's pixels.", value: (r) => r.foreground?.width },
  'x-foreground-height': { type: 'integer', description: "Height of the subject's box in the input's pixels.", value: (r) => r.foreground?.height },
  'x-uncertainty': {
    type: 'number',
    minimum: 0,
    maximum: 1,
    description:
      "How doubtful the cut is, 0 to 1, from the looks that answered (X-Looks). After two looks (quality=best, or auto when the first was doubtful): how much the model's views disagree, summed over the picture and divided by the subject's area; after one: the model's own hesitation (1 − |2p − 1| per pixel) over the subject's area. Send the highest to a person (docs/api.md, \"Quality: one look or two\").",
    value: (r) => r.uncertainty.toFixed(3),
  },
  'x-looks': {
    type: 'integer',
    minimum: 1,
    maximum: 2,
    description: 'How many times the model looked: 1 (quality=fast, or auto sure of its first look) or 2 (best, or auto after a doubtful first look).',
    value: (r) => r.looks,
  },
  'server-timing': {
    type: 'string',
    description: 'Milliseconds of each stage: the waits for memory and for an HEIC decode, then the pipeline\'s (decode, model, alpha, compose, encode, …).',
    value: (r) => Object.entries(r.timings).map(([stage, ms]) => `${stage};dur=${ms.toFixed(1)}`).join(', '),
  },
};

/** The answer headers as OpenAPI describes a response's headers (`{ type, description }` each). */
export function answerHeaderSchemas(): Record<string, { type: string; description: string; minimum?: number; maximum?: number }> {
  return Object.fromEntries(Object.entries(ANSWER_HEADERS).map(([name, { value: _value, ...schema }]) => [name, schema]));
}

/** The specification's wire: `{"image_base64"}` unless Accept prefers an image type. */
export const NATIVE_ANSWER: AnswerWire = { negotiation: 'json-unless-image' };

/**
 * The one way a removal becomes a reply, for every route that makes one (the native
 * endpoints, remove.bg's and Photoroom's routes, try-it): it negotiates JSON or bytes and the
 * format from Accept and the options, runs the removal, records what the metrics and the
 * usage read (`request.removalTimings`, `request.inputMegapixels`), sets the answer headers
 * (`ANSWER_HEADERS`: `X-Width`, `X-Height`, `X-Uncertainty`, `X-Looks`, `X-Model`,
 * `X-Foreground-*`, `Server-Timing`) and sends the body in the wire's shape.
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
  const result = await app.removals.remove(work.photo, work.signal, { ...work.removal, ...app.removals.replyTerms(reply), format, base64Answer: !raw });
  request.inputMegapixels = (result.input.width * result.input.height) / 1e6;
  request.removalTimings = { ...result.timings, model: result.model, looks: result.looks };
  for (const [name, header] of Object.entries(ANSWER_HEADERS)) {
    const value = header.value(result);
    if (value !== undefined) reply.header(name, value);
  }
  if (wire.headers) reply.headers(wire.headers);
  if (raw) return reply.type(ENCODED_TYPES[result.format]).send(result.bytes);
  return reply.type('application/json; charset=utf-8').send((wire.json ?? ((r: RemovalResult) => cutoutJson(r.bytes)))(result));
}
