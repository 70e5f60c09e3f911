import { describe, expect, it } from 'vitest';
import { CutoutApiError, CutoutClient, type FetchFunction, type RetryEvent } from '@cutout/client';

/**
 * The client's decisions against a scripted server (a `fetch` that answers from a list), for
 * the cases a real server cannot be made to produce on demand: a 429 window, a proxy's 502
 * page, a clock that jumped. test/client/client-server.test.ts runs the client against the
 * real server.
 */

const TOKEN_ID = `cut_user_${'a'.repeat(43)}`;
const PNG_HEADERS = { 'content-type': 'image/png', 'x-width': '4', 'x-height': '3', 'x-request-id': 'req-1' };

type Handler = (url: string, init: RequestInit) => Response | Promise<Response>;

/** A fetch that answers the token exchange with numbered managed tokens, and removals from `script` in order. */
function scriptedServer(script: Handler[], options: { expiresIn?: number } = {}) {
  const calls: { url: string; authorization?: string }[] = [];
  let exchanges = 0;
  const fetchFn: FetchFunction = async (url, init) => {
    const headers = new Headers(init.headers);
    calls.push({ url, authorization: headers.get('authorization') ?? undefined });
    if (url.endsWith('/api/v1/auth/token')) {
      exchanges++;
      // Answer a little later, so that concurrent callers are all waiting for the same one.
      await new Promise((resolve) => setTimeout(resolve, 20));
      return Response.json({ managed_token: `cut_mgd_${exchanges}`, token_type: 'managed', expires_in: options.expiresIn ?? 3600, expires_at: new Date().toISOString() });
    }
    const next = script.shift();
    if (!next) throw new Error(`unscripted request to ${url}`);
    return next(url, init);
  };
  return { fetchFn, calls, exchanges: () => exchanges, removals: () => calls.filter((call) => !call.url.endsWith('/auth/token')) };
}

const image = () => new Response(new Uint8Array([137, 80, 78, 71]), { headers: PNG_HEADERS });
const problem = (status: number, code: string, headers: Record<string, string> = {}) =>
  Response.json({ type: `urn:cutout:error:${code}`, title: code, status, detail: `detail of ${code}`, code, request_id: `req-${code}` }, { status, headers: { 'content-type': 'application/problem+json', ...headers } });

const bytes = new Uint8Array([1, 2, 3]);

describe('CutoutClient against a scripted server', () => {
  it('waits what Retry-After says after a 429, then succeeds', async () => {
    const server = scriptedServer([() => problem(429, 'rate_limited', { 'retry-after': '1' }), image]);
    const retries: RetryEvent[] = [];
    const client = new CutoutClient({ baseUrl: 'http://cutout.test', tokenId: TOKEN_ID, fetch: server.fetchFn, onRetry: (event) => retries.push(event) });
    const started = performance.now();
    const result = await client.removeBackground(bytes);
    expect(performance.now() - started).toBeGreaterThanOrEqual(1000);
    expect(result).toMatchObject({ contentType: 'image/png', width: 4, height: 3, foreground: null, requestId: 'req-1' });
    expect(retries).toHaveLength(1);
    expect(retries[0]).toMatchObject({ attempt: 1, error: { status: 429, code: 'rate_limited', retryAfterMs: 1000 } });
    expect(retries[0].delayMs).toBeGreaterThanOrEqual(1000);
  });

  it('retries a proxy\'s 502 page with backoff, and gives up after maxAttempts with the status kept', async () => {
    const page = () => new Response('<html>Bad Gateway</html>', { status: 502, headers: { 'content-type': 'text/html' } });
    const server = scriptedServer([page, page, page]);
    const retries: RetryEvent[] = [];
    const client = new CutoutClient({ baseUrl: 'http://cutout.test', tokenId: TOKEN_ID, fetch: server.fetchFn, retry: { maxAttempts: 3, baseDelayMs: 20 }, onRetry: (event) => retries.push(event) });
    const error = await client.removeBackground(bytes).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CutoutApiError);
    expect(error).toMatchObject({ status: 502, code: 'unexpected_response' });
    expect(server.removals()).toHaveLength(3);
    expect(retries.map((event) => event.attempt)).toEqual([1, 2]);
    expect(retries[0].delayMs).toBeGreaterThanOrEqual(10);
    expect(retries[1].delayMs).toBeGreaterThanOrEqual(20);
  });

  it('never retries a 4xx other than 429, and carries the problem\'s fields', async () => {
    for (const [status, code] of [[400, 'invalid_request'], [415, 'unsupported_image_format'], [422, 'image_decode_failed'], [413, 'payload_too_large']] as const) {
      const server = scriptedServer([() => problem(status, code)]);
      const client = new CutoutClient({ baseUrl: 'http://cutout.test', tokenId: TOKEN_ID, fetch: server.fetchFn });
      const error = await client.removeBackground(bytes).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ status, code, detail: `detail of ${code}`, requestId: `req-${code}` });
      expect(server.removals()).toHaveLength(1);
    }
  });

  it('sends concurrent calls\' token exchanges as one, and the token in Authorization', async () => {
    const server = scriptedServer([image, image, image, image, image]);
    const client = new CutoutClient({ baseUrl: 'http://cutout.test/', tokenId: TOKEN_ID, fetch: server.fetchFn });
    await Promise.all([1, 2, 3, 4, 5].map(() => client.removeBackground(bytes)));
    expect(server.exchanges()).toBe(1);
    expect(server.removals().map((call) => call.authorization)).toEqual(Array(5).fill('cut_mgd_1'));
    expect(server.removals()[0].url).toBe('http://cutout.test/api/v1/background/remove/multipart');
  });

  it('renews the token before it expires, by its own clock', async () => {
    let now = 1_000_000;
    const server = scriptedServer([image, image, image], { expiresIn: 100 });
    const client = new CutoutClient({ baseUrl: 'http://cutout.test', tokenId: TOKEN_ID, fetch: server.fetchFn, now: () => now });
    await client.removeBackground(bytes);
    now += 79_000;
    await client.removeBackground(bytes);
    expect(server.exchanges()).toBe(1);
    // Within the last fifth of its 100 s: renewed before use.
    now += 2_000;
    await client.removeBackground(bytes);
    expect(server.exchanges()).toBe(2);
    expect(server.removals().map((call) => call.authorization)).toEqual(['cut_mgd_1', 'cut_mgd_1', 'cut_mgd_2']);
  });

  it('on 401 expired_token renews once and sends again; a second expired_token is the caller\'s', async () => {
    const server = scriptedServer([() => problem(401, 'expired_token'), image]);
    const client = new CutoutClient({ baseUrl: 'http://cutout.test', tokenId: TOKEN_ID, fetch: server.fetchFn });
    await client.removeBackground(bytes);
    expect(server.removals().map((call) => call.authorization)).toEqual(['cut_mgd_1', 'cut_mgd_2']);

    const stubborn = scriptedServer([() => problem(401, 'expired_token'), () => problem(401, 'expired_token')]);
    const again = new CutoutClient({ baseUrl: 'http://cutout.test', tokenId: TOKEN_ID, fetch: stubborn.fetchFn });
    await expect(again.removeBackground(bytes)).rejects.toMatchObject({ status: 401, code: 'expired_token' });
    expect(stubborn.exchanges()).toBe(2);
    expect(stubborn.removals()).toHaveLength(2);
  });

  it('an abort during the wait before a retry rejects at once with the signal\'s reason', async () => {
    const server = scriptedServer([() => problem(503, 'queue_full', { 'retry-after': '30' })]);
    const client = new CutoutClient({ baseUrl: 'http://cutout.test', tokenId: TOKEN_ID, fetch: server.fetchFn });
    const controller = new AbortController();
    const started = performance.now();
    const call = client.removeBackground(bytes, { signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    await expect(call).rejects.toMatchObject({ name: 'AbortError' });
    expect(performance.now() - started).toBeLessThan(2000);
    expect(server.removals()).toHaveLength(1);
  });

  it('a 200 that is JSON rather than an image is unexpected_response, not a guess', async () => {
    const server = scriptedServer([() => Response.json({ image_base64: 'iVBORw0KGgo=' })]);
    const client = new CutoutClient({ baseUrl: 'http://cutout.test', tokenId: TOKEN_ID, fetch: server.fetchFn });
    await expect(client.removeBackground(bytes)).rejects.toMatchObject({ status: 200, code: 'unexpected_response' });
  });

  it("format zip's archive is a result, typed application/zip, with its size", async () => {
    const archive = Uint8Array.of(0x50, 0x4b, 0x03, 0x04);
    const server = scriptedServer([() => new Response(archive, { headers: { 'content-type': 'application/zip', 'x-width': '64', 'x-height': '48' } })]);
    const client = new CutoutClient({ baseUrl: 'http://cutout.test', tokenId: TOKEN_ID, fetch: server.fetchFn });
    const result = await client.removeBackground(bytes, { format: 'zip' });
    expect({ contentType: result.contentType, width: result.width, height: result.height, bytes: [...result.bytes] }).toEqual({ contentType: 'application/zip', width: 64, height: 48, bytes: [...archive] });
  });

  it('sends the output options as form fields beside the file, and as JSON beside image_url', async () => {
    const bodies: (FormData | string)[] = [];
    const capture: Handler = (_url, init) => {
      bodies.push(init.body as FormData | string);
      return new Response(new Uint8Array([1]), { headers: { ...PNG_HEADERS, 'x-foreground-top': '1', 'x-foreground-left': '0', 'x-foreground-width': '2', 'x-foreground-height': '2' } });
    };
    const server = scriptedServer([capture, capture]);
    const client = new CutoutClient({ baseUrl: 'http://cutout.test', tokenId: TOKEN_ID, fetch: server.fetchFn });
    const options = { format: 'webp', crop: true, crop_margin: '10%', max_width: 200, bg_color: '#fff', refine: false } as const;
    const fromBytes = await client.removeBackground(bytes, { ...options, timeout: 5000 });
    expect(fromBytes.foreground).toEqual({ top: 1, left: 0, width: 2, height: 2 });
    const form = bodies[0] as FormData;
    expect(Object.fromEntries([...form.entries()].filter(([name]) => name !== 'file'))).toEqual({ format: 'webp', crop: 'true', crop_margin: '10%', max_width: '200', bg_color: '#fff', refine: 'false' });
    expect(new Uint8Array(await (form.get('file') as Blob).arrayBuffer())).toEqual(bytes);

    await client.removeBackground({ url: 'https://example.com/a.jpg' }, options);
    expect(JSON.parse(bodies[1] as string)).toEqual({ ...options, image_url: 'https://example.com/a.jpg' });
    expect(server.removals()[1].url).toBe('http://cutout.test/api/v1/background/remove/url');
  });
});
