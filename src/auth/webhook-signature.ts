import { createHmac, timingSafeEqual } from 'node:crypto';

/** The header that carries a delivery's signature: `t=<unix seconds>,v1=<hex>`. */
export const SIGNATURE_HEADER = 'Cutout-Signature';
/** The header that names a delivery, the same on every attempt: receivers deduplicate on it. */
export const WEBHOOK_ID_HEADER = 'Cutout-Webhook-Id';
/** Signing secrets start with this, so that a person can tell one from a Token ID. */
export const SIGNING_SECRET_PREFIX = 'whsec_';

/**
 * A user token's signing secret, derived rather than stored: HMAC-SHA256 of the server's
 * webhook key over `<user token id>:<generation>`. The store keeps only the generation, which a
 * rotation bumps; whoever reads the database cannot sign, and the secret can be shown once.
 *
 * @example deriveSigningSecret(key, 'f2c…', 1) // 'whsec_…' (43 base64url characters after the prefix)
 */
export function deriveSigningSecret(serverKey: Buffer, userTokenId: string, generation: number): string {
  return SIGNING_SECRET_PREFIX + createHmac('sha256', serverKey).update(`${userTokenId}:${generation}`).digest('base64url');
}

/** HMAC-SHA256, hex, of `<timestamp>.<body>` with the secret (its text, prefix included) as the key. */
function signatureOf(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/**
 * The {@link SIGNATURE_HEADER} value of a delivery sent at `timestamp` (unix seconds).
 *
 * @example signWebhook(secret, 1767225600, '{"event":"job.done",…}') // 't=1767225600,v1=5f0c…'
 */
export function signWebhook(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${signatureOf(secret, timestamp, body)}`;
}

/**
 * What a receiver does (examples/webhooks/ does it without Cutout's code): true when the
 * header's `v1` is the body's signature with this secret, compared in constant time, and its
 * `t` is within `toleranceSeconds` of `now`.
 */
export function verifyWebhookSignature(secret: string, header: string | undefined, body: string, now: Date = new Date(), toleranceSeconds = 300): boolean {
  const fields = new Map((header ?? '').split(',').map((part) => part.trim().split('=', 2) as [string, string]));
  const timestamp = Number(fields.get('t'));
  const given = fields.get('v1') ?? '';
  if (!Number.isInteger(timestamp) || !/^[0-9a-f]{64}$/.test(given)) return false;
  if (Math.abs(now.getTime() / 1000 - timestamp) > toleranceSeconds) return false;
  return timingSafeEqual(Buffer.from(given, 'hex'), Buffer.from(signatureOf(secret, timestamp, body), 'hex'));
}
