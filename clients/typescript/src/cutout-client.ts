import { CutoutApiError } from './cutout-api-error.js';
import { CutoutJobs, type AuthorizedCall } from './cutout-jobs.js';
import { errorOfAnswer, sendOnce, type FetchFunction, type HttpAnswer } from './http-attempt.js';
import { ManagedTokenSource, type ManagedTokenGrant } from './managed-token-source.js';
import { outputOptionFields, type OutputOptions } from './output-options.js';
import { readRemovalResult, type RemovalResult } from './removal-result.js';
import { resolveRetryPolicy, type RetryOptions, type RetryPolicy } from './retry-policy.js';
import { withRetries, type RetryEvent } from './with-retries.js';

/** How a {@link CutoutClient} reaches its server and behaves when things go wrong. */
export interface CutoutClientOptions {
  /** The server's origin, e.g. `http://127.0.0.1:8080` (a path prefix behind a proxy is kept). */
  baseUrl: string;
  /** The Token ID of a user token (`cut_user_…`); the client exchanges it for managed tokens itself. */
  tokenId: string;
  /** The longest one attempt may take, answer included, in ms. Default 120 000. */
  timeout?: number;
  /** Retry policy for every call; `false` never retries. See {@link RetryOptions} for the defaults. */
  retry?: RetryOptions | false;
  /** Called before each retry, e.g. to log it. */
  onRetry?: (event: RetryEvent) => void;
  /** Another `fetch` (a proxy agent, a test double). Default: the platform's. */
  fetch?: FetchFunction;
  /** The clock managed tokens are timed with, in ms. Default `Date.now`. */
  now?: () => number;
}

/** Per call: the output options, and how this call may take its time. */
export interface RemoveBackgroundOptions extends OutputOptions {
  /** Aborting it stops the call at once, waits between retries included; the call rejects with its reason. */
  signal?: AbortSignal;
  /** The longest one attempt may take, in ms (default: the client's). */
  timeout?: number;
  /** This call's retry policy, over the client's. */
  retry?: RetryOptions | false;
}

/** An image: its bytes (a Node Buffer is a Uint8Array), or a URL that the server fetches itself. */
export type RemovalInput = Uint8Array | ArrayBuffer | Blob | { url: string };

const DEFAULT_TIMEOUT_MS = 120_000;

/**
 * A client of one Cutout server. It exchanges the Token ID for a managed token on first
 * use and renews it before it expires (and once more if the server calls it expired),
 * sending all concurrent calls' exchanges as one; it retries what is worth retrying; and it
 * sends and receives raw image bytes, never Base64. One client serves any number of
 * concurrent calls.
 *
 * @example
 * import { readFile, writeFile } from 'node:fs/promises';
 * import { CutoutClient } from '@cutout/client';
 *
 * const cutout = new CutoutClient({ baseUrl: 'http://127.0.0.1:8080', tokenId: process.env.CUTOUT_TOKEN_ID! });
 * const result = await cutout.removeBackground(await readFile('photo.jpg'), { format: 'webp', crop: true });
 * await writeFile('photo.webp', result.bytes);
 */
export class CutoutClient {
  readonly #base: string;
  readonly #tokenId: string;
  readonly #timeout: number;
  readonly #retry: RetryPolicy;
  readonly #onRetry: ((event: RetryEvent) => void) | undefined;
  readonly #fetch: FetchFunction;
  readonly #tokens: ManagedTokenSource;
  /** Jobs: many images in one call, worked through by the server (see {@link CutoutJobs}). */
  readonly jobs: CutoutJobs;

  constructor(options: CutoutClientOptions) {
    if (!options.baseUrl) throw new TypeError('CutoutClient needs a baseUrl, such as http://127.0.0.1:8080');
    if (!options.tokenId) throw new TypeError('CutoutClient needs a tokenId (a Token ID, cut_user_…)');
    this.#base = options.baseUrl.replace(/\/+$/, '');
    this.#tokenId = options.tokenId;
    this.#timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
    this.#retry = resolveRetryPolicy(options.retry);
    this.#onRetry = options.onRetry;
    // Called unbound: some platforms' fetch throws when called as another object's method.
    const platformFetch: FetchFunction = (input, init) => fetch(input, init);
    this.#fetch = options.fetch ?? platformFetch;
    this.#tokens = new ManagedTokenSource(() => this.#exchange(), options.now ?? Date.now);
    this.jobs = new CutoutJobs((request, callOptions) => this.#authorized(request, callOptions));
  }

  /**
   * Removes the background of one image. Bytes are uploaded as they are (multipart); a
   * `{ url }` is fetched by the server. Resolves with the encoded result and its size and
   * subject box; rejects with a {@link CutoutApiError}, or with the signal's reason when aborted.
   *
   * @example
   * const { bytes, width, height, foreground } = await cutout.removeBackground({ url: 'https://example.com/shoe.jpg' }, { bg_color: 'fff', format: 'jpg', max_width: 2000 });
   */
  async removeBackground(input: RemovalInput, options: RemoveBackgroundOptions = {}): Promise<RemovalResult> {
    const { signal } = options;
    signal?.throwIfAborted();
    const timeout = options.timeout ?? this.#timeout;
    const fields = outputOptionFields(options);
    const request = removalRequest(input, fields);
    const attempt = async () => {
      let token = await this.#tokens.get(signal);
      let answer = await this.#send(request.path, request.init(token), timeout, signal);
      if (answer.status === 401 && errorOfAnswer(answer).code === 'expired_token') {
        // Our clock thought it alive (a suspended machine, a server whose TTL changed): renew once.
        this.#tokens.invalidate(token);
        token = await this.#tokens.get(signal);
        answer = await this.#send(request.path, request.init(token), timeout, signal);
      }
      if (answer.status !== 200) throw errorOfAnswer(answer);
      return readRemovalResult(answer);
    };
    return withRetries(attempt, { policy: resolveRetryPolicy(options.retry, this.#retry), signal, onRetry: this.#onRetry });
  }

  /** One request with a managed token (renewed once if the server calls it expired), retried by the policy. */
  #authorized: AuthorizedCall = (request, options) => {
    const { signal } = options;
    signal?.throwIfAborted();
    const timeout = options.timeout ?? this.#timeout;
    const init = (token: string): RequestInit => ({
      method: request.method,
      headers: { authorization: token, ...(request.json !== undefined && { 'content-type': 'application/json' }), ...request.headers },
      ...(request.json !== undefined && { body: JSON.stringify(request.json) }),
      ...(request.form && { body: request.form() }),
    });
    const attempt = async () => {
      let token = await this.#tokens.get(signal);
      let answer = await this.#send(request.path, init(token), timeout, signal);
      if (answer.status === 401 && errorOfAnswer(answer).code === 'expired_token') {
        this.#tokens.invalidate(token);
        token = await this.#tokens.get(signal);
        answer = await this.#send(request.path, init(token), timeout, signal);
      }
      if (!request.ok.includes(answer.status)) throw errorOfAnswer(answer);
      return answer;
    };
    return withRetries(attempt, { policy: resolveRetryPolicy(options.retry, this.#retry), signal, onRetry: this.#onRetry });
  };

  #send(path: string, init: RequestInit, timeout: number, signal: AbortSignal | undefined): Promise<HttpAnswer> {
    return sendOnce(this.#fetch, `${this.#base}${path}`, init, timeout, signal);
  }

  /** POST /api/v1/auth/token; not tied to one caller's signal, since every waiting call shares it. */
  async #exchange(): Promise<ManagedTokenGrant> {
    const answer = await this.#send('/api/v1/auth/token', { method: 'POST', headers: { token: this.#tokenId } }, this.#timeout, undefined);
    if (answer.status !== 200) throw errorOfAnswer(answer);
    let grant: { managed_token?: unknown; expires_in?: unknown };
    try {
      grant = JSON.parse(new TextDecoder().decode(answer.body)) as typeof grant;
    } catch (error) {
      throw new CutoutApiError({ status: answer.status, code: 'unexpected_response', detail: 'The token exchange did not answer JSON.' }, { cause: error });
    }
    if (typeof grant.managed_token !== 'string' || typeof grant.expires_in !== 'number') {
      throw new CutoutApiError({ status: answer.status, code: 'unexpected_response', detail: 'The token exchange answered no managed_token and expires_in.' });
    }
    return { token: grant.managed_token, expiresInSeconds: grant.expires_in };
  }
}

/** The endpoint and body for `input`: raw bytes as a multipart upload, a URL as JSON. */
function removalRequest(input: RemovalInput, fields: Record<string, string | number | boolean>): { path: string; init: (token: string) => RequestInit } {
  // Any image type will do: `format`, when given, decides, and without it the server sends PNG.
  const accept = 'image/*';
  if (isUrlInput(input)) {
    const body = JSON.stringify({ ...fields, image_url: input.url });
    return {
      path: '/api/v1/background/remove/url',
      init: (token) => ({ method: 'POST', headers: { authorization: token, accept, 'content-type': 'application/json' }, body }),
    };
  }
  // A Blob copies the bytes: the caller may reuse its buffer while the call still retries.
  const file = input instanceof Blob ? input : new Blob([input as BlobPart], { type: 'application/octet-stream' });
  return {
    path: '/api/v1/background/remove/multipart',
    // A FormData is read as the request is sent, so each attempt gets its own.
    init: (token) => {
      const form = new FormData();
      for (const [name, value] of Object.entries(fields)) form.append(name, String(value));
      form.append('file', file, 'image');
      return { method: 'POST', headers: { authorization: token, accept }, body: form };
    },
  };
}

function isUrlInput(input: RemovalInput): input is { url: string } {
  return typeof (input as { url?: unknown }).url === 'string' && !(input instanceof Blob) && !ArrayBuffer.isView(input) && !(input instanceof ArrayBuffer);
}
