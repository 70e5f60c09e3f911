import type { AnswerFormat, RequestedFormat } from '../pipeline/answer-spec.js';

/** How a background answer is sent: the JSON of the specification, or the image's own bytes. */
export interface AnswerChoice {
  /** True: the image's bytes with their Content-Type; false: `{"image_base64": …}`. */
  raw: boolean;
  format: RequestedFormat;
}

const IMAGE_TYPES: Record<string, AnswerFormat> = { 'image/png': 'png', 'image/webp': 'webp', 'image/jpeg': 'jpeg' };

/**
 * Chooses between JSON and raw bytes, and the format, from the request's `Accept` header and
 * its `format` option. Raw bytes when Accept asks for image/png, image/webp, image/jpeg or
 * image/* with a higher preference (q) than application/json; JSON otherwise, `*∕*` and no
 * Accept included, as the specification has it. The format is `format` when the request sent
 * one, even if Accept names another type (the Content-Type then says what was sent);
 * otherwise the supported image type Accept prefers, else PNG.
 *
 * @example chooseAnswer('image/webp', undefined) // { raw: true, format: 'webp' }
 */
export function chooseAnswer(accept: string | undefined, format: RequestedFormat | undefined): AnswerChoice {
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
  return { raw: imageQ > jsonQ, format: format ?? preferred?.format ?? 'png' };
}
