import type { AnswerFormat, RequestedFormat } from '../pipeline/answer-spec.js';

/**
 * Which body a wire sends when Accept does not decide: the specification's JSON
 * (`{"image_base64"}`), remove.bg's image bytes (its JSON only when asked for), or always the
 * image's bytes (Photoroom's route, try-it).
 */
export type Negotiation = 'json-unless-image' | 'image-unless-json' | 'image';

/** How a removal's answer is sent. */
export interface AnswerChoice {
  /** True: the image's bytes with their Content-Type; false: the wire's JSON. */
  raw: boolean;
  format: RequestedFormat;
}

const IMAGE_TYPES: Record<string, AnswerFormat> = { 'image/png': 'png', 'image/webp': 'webp', 'image/jpeg': 'jpeg' };

/**
 * Chooses between JSON and raw bytes, and the format, from the request's `Accept` header and
 * its `format` option. JSON and image types are weighed by their preference (q): with
 * `json-unless-image`, raw bytes only when an image type (image/png, image/webp, image/jpeg
 * or image/*) is preferred to application/json (no Accept and `*∕*` get JSON, as the
 * specification has it); with `image-unless-json`, JSON only when application/json is
 * preferred to every image type, as remove.bg answers. The format is `format` when the
 * request has one (its own, or its wire's default), even if Accept names another type (the
 * Content-Type then says what was sent); otherwise the supported image type Accept prefers,
 * else PNG.
 *
 * @example chooseAnswer('image/webp', undefined, 'json-unless-image') // { raw: true, format: 'webp' }
 */
export function chooseAnswer(accept: string | undefined, format: RequestedFormat | undefined, negotiation: Negotiation): AnswerChoice {
  let imageQ = 0;
  let jsonQ = 0;
  let preferred: { format: AnswerFormat; q: number } | undefined;
  for (const range of (accept ?? '').split(',')) {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    const qParameter = parameters.find((parameter) => parameter.startsWith('q='));
    const q = qParameter ? Number(qParameter.slice(2)) : 1;
    if (!(q > 0)) continue;
    if (type === 'application/json') jsonQ = Math.max(jsonQ, q);
    else if (type === 'image/*' || Object.hasOwn(IMAGE_TYPES, type)) {
      imageQ = Math.max(imageQ, q);
      if (type !== 'image/*' && (!preferred || q > preferred.q)) preferred = { format: IMAGE_TYPES[type], q };
    }
  }
  const raw = negotiation === 'image' || (negotiation === 'image-unless-json' ? jsonQ <= imageQ : imageQ > jsonQ);
  return { raw, format: format ?? preferred?.format ?? 'png' };
}
