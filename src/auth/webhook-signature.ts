import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/**
 * The Standard Webhooks headers (https://www.standardwebhooks.com): the delivery's id, the
 * same on every attempt, which receivers deduplicate on; the attempt's time in unix seconds;
 * and its signatures, `v1,<base64>` each, separated by spaces.
 */
export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';
/** Signing secrets start with this, so that a person can tell one from a Token ID. */
export const SIGNING_SECRET_PREFIX = 'whsec_';

/**
 * A user token's signing secret of one generation, derived rather than stored: the 32 bytes
 * of HMAC-SHA256 of the server's webhook key over `<user token id>:<generation>`, written as
 * Standard Webhooks secrets are, `whsec_` and standard base64. The store keeps only the
 * generation, which a rotation bumps; whoever reads the database cannot sign, and the secret
 * can be shown once.
 *
 * @example deriveSigningSecret(key, 'f2c…', 1) // 'whsec_…=' (44 base64 characters after the prefix)
 */
export function deriveSigningSecret(serverKey: Buffer, userTokenId: string, generation: number): string {
  return SIGNING_SECRET_PREFIX + createHmac('sha256', serverKey).update(`${userTokenId}:${generation}`).digest('base64');
}

/**
 * The {@link WEBHOOK_SIGNATURE_HEADER} value of a delivery: one `v1,<base64>` per secret (the
 * current one first, then those of a rotation's overlap), each HMAC-SHA256 of
 * `<id>.<unix seconds of sentAt>.<body>` keyed with the secret's bytes, as the
 * `standardwebhooks` library computes and checks it. A receiver accepts the delivery when any
 * one of them is right.
 *
 * @example signWebhook([current, previous], 'job_…:job.done', new Date(), body) // 'v1,K5o… v1,9Qe…'
 */
export function signWebhook(secrets: readonly string[], id: string, sentAt: Date, body: string): string {
  if (secrets.length === 0) throw new Error('a webhook is signed with at least one secret');
  return secrets.map((secret) => new Webhook(secret).sign(id, sentAt, body)).join(' ');
}
