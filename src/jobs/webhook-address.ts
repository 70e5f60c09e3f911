import type { LookupFunction } from 'node:net';
import type { Config } from '../config.js';
import { CutoutError } from '../errors.js';
import { addressPolicy, type AddressPolicy } from '../fetch/address-policy.js';
import { resolveCheckedUrl, type CheckedUrl } from '../fetch/fetch-image.js';
import { untilAborted } from '../until-aborted.js';

/** Where webhooks may go: the URL endpoint's policy (CUTOUT_URL_ALLOW_PRIVATE, _ALLOW_HOSTS, _DENY_HOSTS). */
export interface WebhookAddressRules {
  policy: AddressPolicy;
  allowHosts: readonly string[];
  denyHosts: readonly string[];
  /** DNS resolver, called with `{ all: true }`; defaults to `dns.lookup` (tests pass their own). */
  lookup?: LookupFunction;
}

/** The rules image URLs are fetched under, for webhooks. */
export function webhookAddressRules(config: Pick<Config, 'urlAllowPrivate' | 'urlAllowHosts' | 'urlDenyHosts'>): WebhookAddressRules {
  return { policy: addressPolicy(config.urlAllowPrivate), allowHosts: config.urlAllowHosts, denyHosts: config.urlDenyHosts };
}

/**
 * Checks a webhook_url as a fetch of an image URL would be checked, its host resolved once:
 * the answer to where it may connect, with the addresses to pin the connection to. A host that
 * cannot be resolved is `upstream_fetch_failed`; see {@link checkWebhookUrl} for submission.
 */
export function resolveWebhookUrl(url: string, rules: WebhookAddressRules): Promise<CheckedUrl> {
  return resolveCheckedUrl(url, { allowHosts: rules.allowHosts, denyHosts: rules.denyHosts, lookup: rules.lookup }, 'webhook_url', rules.policy);
}

/**
 * Refuses, at a job's submission, a webhook_url Cutout would not deliver to: 400
 * `url_not_allowed`, as the URL endpoint refuses an image URL, also for a host that does not
 * resolve now, or not within `timeoutMs` (a typo is better told at once than after 24 hours
 * of retries).
 */
export async function checkWebhookUrl(url: string, rules: WebhookAddressRules, timeoutMs = 5000): Promise<void> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    await untilAborted(resolveWebhookUrl(url, rules), signal);
  } catch (error) {
    if (error instanceof CutoutError && error.code === 'upstream_fetch_failed') throw new CutoutError('url_not_allowed', error.message, { cause: error });
    if (signal.aborted) throw new CutoutError('url_not_allowed', `webhook_url: its host could not be resolved within ${timeoutMs} ms.`, { cause: error });
    throw error;
  }
}
