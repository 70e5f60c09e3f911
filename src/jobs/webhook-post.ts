import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { CutoutError } from '../errors.js';
import { pinnedLookup } from '../fetch/fetch-image.js';
import { untilAborted } from '../until-aborted.js';
import { resolveWebhookUrl, type WebhookAddressRules } from './webhook-address.js';

const USER_AGENT = 'Cutout-Webhook/1 (+background removal)';
/** The most of a receiver's answer read; its body is never kept, only drained. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** How one POST ended: the receiver's status, or why there was none (in a few words). */
export type WebhookPostResult = { status: number } | { error: string };

/**
 * POSTs a webhook's body once: the URL checked again under the address rules and its host
 * resolved, the connection pinned to the addresses checked (a DNS answer that changed since,
 * rebinding the name to a private address, is not used), no redirect followed, everything
 * within `timeoutMs`. Never throws: a refused address, a connection error or the deadline is
 * an `error`.
 *
 * @example await postWebhook(url, body, { 'webhook-signature': … }, rules, 10_000) // { status: 204 }
 */
export async function postWebhook(url: string, body: string, headers: Record<string, string>, rules: WebhookAddressRules, timeoutMs: number): Promise<WebhookPostResult> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const { target, host, addresses } = await untilAborted(resolveWebhookUrl(url, rules), signal);
    const options: https.RequestOptions = {
      host,
      port: target.port === '' ? undefined : Number(target.port),
      path: `${target.pathname}${target.search}`,
      method: 'POST',
      headers: { 'User-Agent': USER_AGENT, 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)), ...headers },
      // A fresh agent per attempt: a pooled socket would skip this attempt's address check.
      agent: false,
      lookup: pinnedLookup(addresses),
      signal,
      servername: isIP(host) === 0 ? host : undefined,
    };
    const status = await new Promise<number>((resolve, reject) => {
      const send = target.protocol === 'https:' ? https.request : http.request;
      const request = send(options, (response) => {
        // The status is the answer; the body is drained (up to a limit) and dropped.
        resolve(response.statusCode ?? 0);
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BYTES) response.destroy();
        });
        response.on('error', () => {});
      });
      request.on('error', reject);
      request.end(body);
    });
    return { status };
  } catch (error) {
    if (signal.aborted) return { error: `no answer within ${timeoutMs} ms` };
    if (error instanceof CutoutError) return { error: error.message };
    const code = (error as { code?: unknown } | null)?.code;
    return { error: typeof code === 'string' ? code : 'connection failed' };
  }
}
