import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { CutoutError } from '../errors.js';
import { untilAborted } from '../until-aborted.js';
import { addressPolicy, parseAddress, type AddressPolicy } from './address-policy.js';

const USER_AGENT = 'Cutout/0.1 (+background removal)';
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export interface FetchImageOptions {
  /** Deadline for the whole fetch, DNS and body included, in milliseconds. */
  timeoutMs: number;
  /** Most body bytes accepted; checked on Content-Length up front and while streaming. */
  maxBytes: number;
  /** Most redirects followed; each hop is checked like the first URL. */
  maxRedirects: number;
  /** When true, loopback and private addresses may be fetched (development and tests only). */
  allowPrivate: boolean;
  /** Host names that may be fetched: exact, or `*.example.com` for any subdomain. Empty or absent: all. */
  allowHosts?: readonly string[];
  /** Host names that may never be fetched, same syntax; checked before allowHosts. */
  denyHosts?: readonly string[];
  /** DNS resolver, called with `{ all: true }`; defaults to `dns.lookup`. */
  lookup?: LookupFunction;
  /** Aborts the fetch, e.g. when the client has disconnected. */
  signal?: AbortSignal;
  /** The request field the URL came from, as the errors name it (default `image_url`). */
  field?: string;
}

/**
 * Fetches the bytes behind an `image_url` without letting the URL reach anything but the public
 * internet: http(s) only, every host resolved once and each of its addresses checked, the
 * connection pinned to the checked addresses (a second DNS answer cannot slip in), redirects
 * followed by hand and checked again, one deadline for everything, and a byte cap.
 *
 * Throws CutoutError `url_not_allowed`, `upstream_fetch_failed`, `upstream_timeout` or
 * `payload_too_large`.
 *
 * @example
 * const bytes = await fetchImage(body.image_url, { timeoutMs: 15_000, maxBytes: 25 << 20, maxRedirects: 3, allowPrivate: false });
 */
export async function fetchImage(url: string, options: FetchImageOptions): Promise<Buffer> {
  return fetchImageWithPolicy(url, options, addressPolicy(options.allowPrivate));
}

/**
 * fetchImage with the address policy passed in, which then replaces `allowPrivate`. It is the
 * seam tests use to count their loopback server as public; production code calls fetchImage.
 */
export async function fetchImageWithPolicy(url: string, options: FetchImageOptions, policy: AddressPolicy): Promise<Buffer> {
  const field = options.field ?? 'image_url';
  const deadline = new FetchDeadline(options.timeoutMs, options.signal, field);
  try {
    let target = checkUrl(url, options, field);
    for (let redirects = 0; ; redirects++) {
      const subject = redirects === 0 ? field : `${field} redirect ${redirects}`;
      const addresses = await untilAborted(resolveAllowed(target, subject, options.lookup ?? dnsLookup, policy), deadline.signal);
      const response = await request(target, addresses, deadline.signal);
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (REDIRECT_STATUSES.has(status) && location !== undefined) {
        response.destroy();
        if (redirects >= options.maxRedirects) {
          throw new CutoutError('upstream_fetch_failed', `${field} redirected more than ${options.maxRedirects} times.`);
        }
        target = checkUrl(resolveLocation(location, target, field), options, `${field} redirect ${redirects + 1}`);
        continue;
      }
      if (status < 200 || status > 299) {
        response.destroy();
        throw new CutoutError('upstream_fetch_failed', `${subject} answered HTTP ${status}.`);
      }
      return await readBody(response, options.maxBytes, field);
    }
  } catch (error) {
    throw deadline.explain(error);
  } finally {
    deadline.stop();
  }
}

/**
 * The checks of {@link fetchImage} that need no DNS and no connection, for refusing a URL
 * before the request waits for anything: scheme, credentials, the host lists, and a host
 * written as an IP address judged by the address policy. Throws `url_not_allowed`; a URL
 * that passes may still be refused by the fetch, once its host name is resolved.
 *
 * @example checkUrlLiterally('http://10.0.0.1/bg.png', { allowPrivate: false }, 'bg_image_url') // throws url_not_allowed
 */
export function checkUrlLiterally(url: string, options: Pick<FetchImageOptions, 'allowPrivate' | 'allowHosts' | 'denyHosts'>, field: string): void {
  const host = hostOf(checkUrl(url, options, field));
  const literal = parseAddress(host);
  const reason = literal && addressPolicy(options.allowPrivate)(literal);
  if (reason !== undefined) throw new CutoutError('url_not_allowed', `${field}: ${host} is not a public address (${reason}).`);
}

/** A URL that passed every check of {@link resolveCheckedUrl}, and the addresses to connect to. */
export interface CheckedUrl {
  target: URL;
  /** The host as connected to: normalised, without brackets or a trailing dot. */
  host: string;
  addresses: LookupAddress[];
}

/**
 * The checks {@link fetchImage} makes before it connects, for another kind of request held
 * to the same policy (a job's webhook): the URL's literal checks, then its host resolved once
 * and every address judged. Connect with {@link pinnedLookup} of the addresses returned, so
 * that a second DNS answer cannot slip a private address in. Throws `url_not_allowed`, or
 * `upstream_fetch_failed` when the host cannot be resolved.
 *
 * @example const { target, addresses } = await resolveCheckedUrl(url, {}, 'webhook_url', nonPublicReason)
 */
export async function resolveCheckedUrl(
  url: string,
  options: Pick<FetchImageOptions, 'allowHosts' | 'denyHosts' | 'lookup'>,
  field: string,
  policy: AddressPolicy,
): Promise<CheckedUrl> {
  const target = checkUrl(url, options, field);
  const addresses = await resolveAllowed(target, field, options.lookup ?? dnsLookup, policy);
  return { target, host: hostOf(target), addresses };
}

/** Parses a URL and applies the checks that need no DNS: scheme, credentials, host lists. */
function checkUrl(url: string, options: Pick<FetchImageOptions, 'allowHosts' | 'denyHosts'>, subject: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (error) {
    throw new CutoutError('url_not_allowed', `${subject} is not a valid absolute URL.`, { cause: error });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new CutoutError('url_not_allowed', `${subject} must use http: or https:, not ${parsed.protocol}`);
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw new CutoutError('url_not_allowed', `${subject} must not contain a user name or password.`);
  }
  const host = hostOf(parsed);
  if (options.denyHosts !== undefined && matchesAnyHost(host, options.denyHosts)) {
    throw new CutoutError('url_not_allowed', `${subject}: host ${host} is on the deny list.`);
  }
  if (options.allowHosts !== undefined && options.allowHosts.length > 0 && !matchesAnyHost(host, options.allowHosts)) {
    throw new CutoutError('url_not_allowed', `${subject}: host ${host} is not on the allow list.`);
  }
  return parsed;
}

/**
 * The URL's host as checked and connected to: WHATWG-normalised (so `0x7f.1` is already
 * `127.0.0.1`), without IPv6 brackets and without a trailing dot.
 */
function hostOf(url: URL): string {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

function matchesAnyHost(host: string, patterns: readonly string[]): boolean {
  return patterns.some((raw) => {
    const pattern = raw.trim().toLowerCase().replace(/\.$/, '');
    if (pattern.startsWith('*.')) {
      const suffix = pattern.slice(1);
      return host.endsWith(suffix) && host.length > suffix.length;
    }
    return host === pattern;
  });
}

/**
 * Resolves the host once and returns its addresses if the policy allows every one of them;
 * a name with one non-public answer among public ones is refused as a whole.
 */
async function resolveAllowed(target: URL, subject: string, lookup: LookupFunction, policy: AddressPolicy): Promise<LookupAddress[]> {
  const host = hostOf(target);
  const literal = parseAddress(host);
  if (literal !== undefined) {
    const reason = policy(literal);
    if (reason !== undefined) throw new CutoutError('url_not_allowed', `${subject}: ${host} is not a public address (${reason}).`);
    return [{ address: host, family: isIP(host) }];
  }
  let addresses: LookupAddress[];
  try {
    addresses = await lookupAll(lookup, host);
  } catch (error) {
    throw new CutoutError('upstream_fetch_failed', `${subject}: host ${host} could not be resolved (${shortReason(error)}).`, { cause: error });
  }
  if (addresses.length === 0) throw new CutoutError('upstream_fetch_failed', `${subject}: host ${host} has no addresses.`);
  for (const { address } of addresses) {
    const parsed = parseAddress(address);
    const reason = parsed === undefined ? 'not an IP address' : policy(parsed);
    // The address itself stays out of the detail: it would map the private network for the caller.
    if (reason !== undefined) throw new CutoutError('url_not_allowed', `${subject}: host ${host} resolves to a non-public address (${reason}).`);
  }
  return addresses;
}

function lookupAll(lookup: LookupFunction, host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    lookup(host, { all: true }, (error, address, family) => {
      if (error) reject(error);
      else if (Array.isArray(address)) resolve(address);
      else resolve([{ address, family: family ?? isIP(address) }]);
    });
  });
}

/** A socket `lookup` that answers only the checked addresses, whatever DNS would say now. */
export function pinnedLookup(addresses: readonly LookupAddress[]): LookupFunction {
  const [first] = addresses;
  return (_hostname, options, callback) => {
    if (options.all === true) callback(null, [...addresses]);
    else callback(null, first.address, first.family);
  };
}

/** Sends one GET to the pinned addresses and resolves with the response head. */
function request(target: URL, addresses: readonly LookupAddress[], signal: AbortSignal): Promise<IncomingMessage> {
  const host = hostOf(target);
  const options: https.RequestOptions = {
    host,
    port: target.port === '' ? undefined : Number(target.port),
    path: `${target.pathname}${target.search}`,
    method: 'GET',
    headers: { 'User-Agent': USER_AGENT, Accept: 'image/*', 'Accept-Encoding': 'identity' },
    // A fresh agent per request: a pooled socket would skip the address check of this hop.
    agent: false,
    lookup: pinnedLookup(addresses),
    signal,
    // The certificate is still verified against the host name, not the pinned address.
    servername: isIP(host) === 0 ? host : undefined,
  };
  return new Promise((resolve, reject) => {
    const req = target.protocol === 'https:' ? https.request(options, resolve) : http.request(options, resolve);
    req.on('error', reject);
    req.end();
  });
}

function resolveLocation(location: string, base: URL, field: string): string {
  try {
    return new URL(location, base).href;
  } catch (error) {
    throw new CutoutError('upstream_fetch_failed', `${field} redirected to an invalid URL.`, { cause: error });
  }
}

/** Reads the body, refusing it as soon as it is known or counted to exceed maxBytes. */
async function readBody(response: IncomingMessage, maxBytes: number, field: string): Promise<Buffer> {
  const tooLarge = () => new CutoutError('payload_too_large', `${field}: the fetched image exceeds ${maxBytes} bytes.`);
  if (Number(response.headers['content-length']) > maxBytes) {
    response.destroy();
    throw tooLarge();
  }
  // No abort listener here: the request's `signal` destroys the socket, which ends this loop.
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}

/**
 * One AbortSignal for the whole fetch, aborted with a CutoutError as its reason when the
 * deadline passes or the caller aborts.
 */
class FetchDeadline {
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  readonly #caller: AbortSignal | undefined;
  readonly #field: string;
  readonly #onCallerAbort = () => {
    this.#controller.abort(new CutoutError('upstream_fetch_failed', 'The fetch was cancelled.', { cause: this.#caller?.reason }));
  };

  constructor(timeoutMs: number, caller: AbortSignal | undefined, field: string) {
    this.#field = field;
    this.#timer = setTimeout(() => {
      this.#controller.abort(new CutoutError('upstream_timeout', `${field} did not finish within ${timeoutMs} ms.`));
    }, timeoutMs);
    this.#caller = caller;
    if (caller?.aborted) this.#onCallerAbort();
    else caller?.addEventListener('abort', this.#onCallerAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#caller?.removeEventListener('abort', this.#onCallerAbort);
  }

  /** Turns whatever a fetch step threw into the CutoutError the caller should see. */
  explain(error: unknown): CutoutError {
    if (error instanceof CutoutError) return error;
    if (this.#controller.signal.aborted) return this.#controller.signal.reason as CutoutError;
    return new CutoutError('upstream_fetch_failed', `${this.#field} could not be fetched (${shortReason(error)}).`, { cause: error });
  }
}

/** A low-level error's code (ECONNREFUSED, DEPTH_ZERO_SELF_SIGNED_CERT…), never its full text. */
function shortReason(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'connection failed';
}
