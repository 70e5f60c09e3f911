import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CutoutApiError, CutoutClient, type RetryEvent } from '@cutout/client';
import { alphaAt, makePhoto } from '../helpers/images.js';
import { startServedCutout, type ServedCutout } from '../helpers/served-cutout.js';

/**
 * The SDK against the real server (a child process with the real model): managed tokens
 * that live 3 s, a queue that holds nothing (a second image at once is 503 queue_full), no
 * rate limit. One server for the whole file; each test uses tokens of its own and counts the
 * server's log lines from where it starts.
 */

const TTL_SECONDS = 3;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the TypeScript SDK against a running Cutout', () => {
  let cutout: ServedCutout;
  let photo: Buffer;
  let imageHost: Server;
  let imageUrl: string;

  beforeAll(async () => {
    [cutout, photo] = await Promise.all([
      startServedCutout({ CUTOUT_MANAGED_TOKEN_TTL: String(TTL_SECONDS), CUTOUT_QUEUE_MAX: '0', CUTOUT_RATE_LIMIT: '0', CUTOUT_URL_ALLOW_PRIVATE: 'true' }),
      makePhoto('jpeg', 640, 480),
    ]);
    imageHost = createServer((_request, response) => response.writeHead(200, { 'content-type': 'image/jpeg' }).end(photo));
    await new Promise<void>((resolve) => imageHost.listen(0, '127.0.0.1', resolve));
    imageUrl = `http://127.0.0.1:${(imageHost.address() as AddressInfo).port}/photo.jpg`;
  }, 120_000);

  afterAll(async () => {
    await new Promise((resolve) => imageHost?.close(resolve));
    await cutout?.close();
  });

  const newClient = async (options: Partial<ConstructorParameters<typeof CutoutClient>[0]> = {}) =>
    new CutoutClient({ baseUrl: cutout.origin, tokenId: await cutout.createTokenId(), ...options });

  it('removes the background of bytes and of a URL, answering raw image bytes with their size and subject box', async () => {
    const client = await newClient();
    const fromBytes = await client.removeBackground(photo);
    expect(fromBytes.contentType).toBe('image/png');
    expect(Buffer.from(fromBytes.bytes.subarray(0, 8)).toString('hex')).toBe('89504e470d0a1a0a');
    expect([fromBytes.width, fromBytes.height]).toEqual([640, 480]);
    expect(await alphaAt(Buffer.from(fromBytes.bytes), 0.5, 0.5)).toBeGreaterThan(200);
    expect(await alphaAt(Buffer.from(fromBytes.bytes), 0.02, 0.02)).toBeLessThan(30);
    // The ball: centred, radius 0.3 × 480 = 144 px.
    const box = fromBytes.foreground!;
    expect(Math.abs(box.left + box.width / 2 - 320)).toBeLessThan(16);
    expect(Math.abs(box.top + box.height / 2 - 240)).toBeLessThan(40);
    expect(box.width).toBeGreaterThan(250);
    expect(fromBytes.requestId).toMatch(/^[0-9a-f-]{36}$/);

    const fromUrl = await client.removeBackground({ url: imageUrl }, { format: 'webp', max_width: 320 });
    expect(fromUrl.contentType).toBe('image/webp');
    const meta = await sharp(Buffer.from(fromUrl.bytes)).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['webp', 320, 240]);
    expect([fromUrl.width, fromUrl.height]).toEqual([320, 240]);
  });

  it('calls at once share one token exchange, and a full queue answers 503 queue_full that they wait out and retry to success', async () => {
    const retries: RetryEvent[] = [];
    // Three callers race for one place: on a loaded machine one may lose several times, so
    // this test allows more attempts than the default; what it checks is the waiting.
    const client = await newClient({ onRetry: (event) => retries.push(event), retry: { maxAttempts: 20, maxElapsedMs: 300_000 } });
    const logsBefore = cutout.server.logs.length;
    const refusedBefore = cutout.refusals('queue_full').length;

    // allSettled: a call that failed must not leave the others running into the next test.
    const settled = await Promise.allSettled([1, 2, 3].map(() => client.removeBackground(photo)));
    const results = settled.map((outcome) => {
      if (outcome.status === 'rejected') throw outcome.reason;
      return outcome.value;
    });

    expect(results.map((result) => [result.contentType, result.width, result.height])).toEqual(Array(3).fill(['image/png', 640, 480]));
    await Promise.all(results.map((result) => cutout.logged(result.requestId)));
    // The three first attempts went out after one exchange (retries later may renew: tokens live 3 s here).
    const requests = cutout.server.logs.slice(logsBefore).filter((line) => line.msg === 'incoming request').map((line) => (line.req as { url: string }).url);
    const thirdUpload = requests.map((url, i) => [url, i] as const).filter(([url]) => url === '/api/v1/background/remove/multipart')[2][1];
    expect(requests.slice(0, thirdUpload).filter((url) => url === '/api/v1/auth/token')).toHaveLength(1);
    // With room for one image only, at least two of the three were refused at first.
    expect(retries.length).toBeGreaterThanOrEqual(2);
    for (const { error, delayMs } of retries) {
      expect(error).toMatchObject({ status: 503, code: 'queue_full' });
      expect(error.retryAfterMs).toBeGreaterThanOrEqual(1000);
      expect(delayMs).toBeGreaterThanOrEqual(error.retryAfterMs!);
    }
    expect(cutout.refusals('queue_full').length - refusedBefore).toBe(retries.length);
  });

  it(`renews the managed token (lifetime ${TTL_SECONDS} s) before it expires, so the server never refuses it`, async () => {
    const client = await newClient();
    const exchangesBefore = cutout.requestsTo('/api/v1/auth/token').length;
    const expiredBefore = cutout.refusals('expired_token').length;
    const started = performance.now();
    await client.removeBackground(photo);
    // Past the first token's whole lifetime: without renewal the next call would send a dead token.
    await sleep(Math.max(0, TTL_SECONDS * 1000 + 500 - (performance.now() - started)));
    await cutout.logged((await client.removeBackground(photo)).requestId);
    // Without renewal: one exchange, and a refusal. (A retry on a loaded machine may renew once more.)
    expect(cutout.requestsTo('/api/v1/auth/token').length - exchangesBefore).toBeGreaterThanOrEqual(2);
    expect(cutout.refusals('expired_token').length - expiredBefore).toBe(0);
  });

  it('when the server calls the token expired (the client\'s clock stood still), renews once and succeeds', async () => {
    const frozen = Date.now();
    const client = await newClient({ now: () => frozen });
    const exchangesBefore = cutout.requestsTo('/api/v1/auth/token').length;
    const expiredBefore = cutout.refusals('expired_token').length;
    await client.removeBackground(photo);
    await sleep(TTL_SECONDS * 1000 + 300);
    const result = await client.removeBackground(photo);
    expect(result.contentType).toBe('image/png');
    await cutout.logged(result.requestId);
    expect(cutout.refusals('expired_token').length - expiredBefore).toBe(1);
    expect(cutout.requestsTo('/api/v1/auth/token').length - exchangesBefore).toBe(2);
  });

  it('a revoked token fails at once with 401 revoked_token, never retried, and so does its next exchange', async () => {
    const tokenId = await cutout.createTokenId('to-revoke');
    const retries: RetryEvent[] = [];
    // A clock that stands still keeps the client on its first managed token, which tokens of 3 s would otherwise renew.
    const frozen = Date.now();
    const client = new CutoutClient({ baseUrl: cutout.origin, tokenId, now: () => frozen, onRetry: (event) => retries.push(event) });
    await client.removeBackground(photo);
    await cutout.revoke(tokenId);
    const uploadsBefore = cutout.requestsTo('/api/v1/background/remove/multipart').length;

    const error = await client.removeBackground(photo).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(CutoutApiError);
    expect(error).toMatchObject({ status: 401, code: 'revoked_token' });
    expect((error as CutoutApiError).detail).toContain('to-revoke');
    expect((error as CutoutApiError).requestId).toMatch(/^[0-9a-f-]{36}$/);
    await cutout.logged((error as CutoutApiError).requestId!);
    expect(cutout.requestsTo('/api/v1/background/remove/multipart').length - uploadsBefore).toBe(1);

    const fresh = new CutoutClient({ baseUrl: cutout.origin, tokenId, onRetry: (event) => retries.push(event) });
    await expect(fresh.removeBackground(photo)).rejects.toMatchObject({ status: 401, code: 'revoked_token' });
    expect(retries).toEqual([]);
  });

  it('an abort stops a call in flight at once, and the server drops its work; an aborted signal sends nothing', async () => {
    const client = await newClient();

    const seen = new Set(cutout.requestsTo('/api/v1/background/remove/multipart').map((line) => line.reqId));
    const controller = new AbortController();
    const call = client.removeBackground(photo, { signal: controller.signal });
    const request = await cutout.server.waitForLog((line) => line.msg === 'incoming request' && (line.req as { url?: string }).url === '/api/v1/background/remove/multipart' && !seen.has(line.reqId), 10_000);
    const abortedAt = performance.now();
    controller.abort();
    const error = await call.catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: 'AbortError' });
    // The server's refusal below (the client left) shows the call did not wait for its answer;
    // the ceiling only bounds how long the abort may take on a loaded machine.
    expect(performance.now() - abortedAt).toBeLessThan(5000);
    // The server saw the client leave and dropped the request's work.
    const refused = await cutout.server.waitForLog((line) => line.reqId === request.reqId && line.msg === 'request refused', 10_000);
    expect(refused.detail).toBe('The client closed the connection.');

    const before = cutout.requestsTo('/api/v1/background/remove/multipart').length;
    await expect(client.removeBackground(photo, { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
    expect(cutout.requestsTo('/api/v1/background/remove/multipart').length).toBe(before);
  });

  it('an attempt past its timeout, and a server that is not there, fail as CutoutApiErrors with status 0 after their attempts', async () => {
    const client = await newClient();
    await expect(client.removeBackground(photo, { timeout: 5, retry: false })).rejects.toMatchObject({ status: 0, code: 'timeout' });

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const retries: RetryEvent[] = [];
    const nowhere = new CutoutClient({ baseUrl: `http://127.0.0.1:${port}`, tokenId: 'cut_user_x', retry: { maxAttempts: 3, baseDelayMs: 10 }, onRetry: (event) => retries.push(event) });
    await expect(nowhere.removeBackground(photo)).rejects.toMatchObject({ status: 0, code: 'connection_failed' });
    expect(retries.map((event) => [event.attempt, event.error.code])).toEqual([
      [1, 'connection_failed'],
      [2, 'connection_failed'],
    ]);
  });
});
