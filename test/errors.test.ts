import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type AddressInfo, type Socket } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS, type ErrorCode } from '../src/errors.js';
import { answerClientError } from '../src/http/client-error.js';
import { ModelService } from '../src/model/model-service.js';
import type { Segmenter } from '../src/model/segmenter.js';
import { isPostgresUnreachable } from '../src/store/postgres-outage.js';
import { openSqliteStore } from '../src/store/sqlite-store.js';
import { reportUnavailability } from '../src/store/store-unavailable.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { fakeSegmenter, uniformMask } from './helpers/fake-segmenter.js';
import { makePhoto, multipartUpload } from './helpers/images.js';

type Injected = Awaited<ReturnType<TestApp['app']['inject']>>;

/** Every refusal is problem+json with the registry's status for its code and the request id. */
function expectProblem(response: Injected, code: ErrorCode) {
  const body = response.json();
  expect({ status: response.statusCode, code: body.code }, body.detail).toEqual({ status: ERRORS[code].status, code });
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(body).toMatchObject({ type: `urn:cutout:error:${code}`, title: ERRORS[code].title, status: ERRORS[code].status });
  expect(typeof body.detail).toBe('string');
  expect(body.request_id).toBe(response.headers['x-request-id']);
  expect(JSON.stringify(body)).not.toMatch(/ at .*\.(ts|js):\d+/);
  return body;
}

const seen = new Set<ErrorCode>();
const problem = (response: Injected, code: ErrorCode) => {
  seen.add(code);
  return expectProblem(response, code);
};

let t: TestApp;
let auth: string;
let jpeg: Buffer;
let server: Server;
let base: string;

beforeAll(async () => {
  // A deadline no loopback answer misses on a loaded machine (the 404 case must not time out);
  // the case of a server that never answers has an app of its own with a short one.
  t = await startTestApp({ urlAllowPrivate: true, urlTimeoutMs: 30_000 });
  auth = await t.managedToken();
  jpeg = await makePhoto('jpeg', 320, 240);
  server = createServer((req, res) => {
    if (req.url === '/slow') return; // never answers
    res.writeHead(404).end('no');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.close();
  await t?.close();
  // The registry and the tests agree: every code has a test that provokes it.
  expect([...seen].sort()).toEqual(Object.keys(ERRORS).sort());
});

const post = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url, headers: { authorization: auth, ...headers }, payload: payload as string });
const base64Body = (bytes: Buffer | string) => ({ image_base64: Buffer.from(bytes).toString('base64') });

describe('request shape', () => {
  it('missing field → invalid_request', async () => {
    problem(await post('/api/v1/background/remove/base64', {}), 'invalid_request');
    problem(await post('/api/v1/background/remove/url', { url: 'http://x' }), 'invalid_request');
  });
  it('wrong type → invalid_request (no coercion of numbers to strings)', async () => {
    problem(await post('/api/v1/background/remove/base64', { image_base64: 12345678 }), 'invalid_request');
  });
  it('empty image → invalid_request', async () => {
    problem(await post('/api/v1/background/remove/base64', { image_base64: '' }), 'invalid_request');
  });
  it('malformed JSON → malformed_json', async () => {
    problem(await post('/api/v1/background/remove/base64', '{"image_base64": ', { 'content-type': 'application/json' }), 'malformed_json');
  });
  it('invalid Base64 → invalid_base64', async () => {
    problem(await post('/api/v1/background/remove/base64', { image_base64: 'abc$def' }), 'invalid_base64');
  });
  it('wrong Content-Type → unsupported_media_type', async () => {
    problem(await post('/api/v1/background/remove/base64', 'hello', { 'content-type': 'text/plain' }), 'unsupported_media_type');
    problem(await post('/api/v1/background/remove/multipart', { file: 'x' }), 'unsupported_media_type');
  });
  it('a model the server has not loaded → unknown_model, naming the loaded ones', async () => {
    const body = problem(await post('/api/v1/background/remove/base64', { image_base64: jpeg.toString('base64'), model: 'u2net' }), 'unknown_model');
    expect(body.detail).toBe('There is no model "u2net" here; this server has loaded isnet.');
  });
  it('unknown route → not_found', async () => {
    problem(await t.app.inject({ method: 'GET', url: '/api/v1/nothing' }), 'not_found');
  });
});

/**
 * What Node's HTTP parser refuses never reaches Fastify's routes or `inject()`: these requests
 * are written byte for byte on a socket of the listening app, and the answer is read until
 * the server closes the connection.
 */
describe('requests the HTTP parser refuses, on a real socket', () => {
  const rawExchange = async (request: string): Promise<Injected> => {
    await t.app.listen({ port: 0, host: '127.0.0.1' }).catch((error: { code?: string }) => {
      if (error.code !== 'FST_ERR_REOPENED_SERVER') throw error; // listening since the case before
    });
    const { port } = t.app.server.address() as AddressInfo;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.end(request));
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', reject);
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
    return parseRaw(answer);
  };
  /** An HTTP answer as written on the socket, as inject() would give it. */
  const parseRaw = (answer: string): Injected => {
    const [head, body] = answer.split('\r\n\r\n', 2);
    const [statusLine, ...fields] = head.split('\r\n');
    const headers = Object.fromEntries(fields.map((field) => [field.slice(0, field.indexOf(':')).toLowerCase(), field.slice(field.indexOf(':') + 1).trim()]));
    expect(Number(headers['content-length'])).toBe(Buffer.byteLength(body));
    return { statusCode: Number(statusLine.split(' ')[1]), headers, json: () => JSON.parse(body) } as unknown as Injected;
  };

  it('a 20 KB header → 431 headers_too_large, and the connection closed', async () => {
    const answer = await rawExchange(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
    const body = problem(answer, 'headers_too_large');
    expect(body.detail).toMatch(/16384 bytes/);
    expect(answer.headers.connection).toBe('close');
  });
  it('bytes that are not HTTP → 400 invalid_request', async () => {
    problem(await rawExchange('HELLO / SMTP\r\n\r\n'), 'invalid_request');
  });
  // Node checks its headersTimeout every 30 s: the handler is given the error Node gives it.
  it("headers that do not arrive in time (Node's ERR_HTTP_REQUEST_TIMEOUT) → 408 request_timeout", () => {
    let written = '';
    const socket = { destroyed: false, writable: true, end: (bytes: string) => void (written = bytes), destroy: () => {} } as unknown as Socket;
    answerClientError.call(t.app, Object.assign(new Error('Request Timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket);
    expect(written).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    problem(parseRaw(written), 'request_timeout');
  });
});

describe('images', () => {
  it('text and SVG → unsupported_image_format', async () => {
    problem(await post('/api/v1/background/remove/base64', base64Body('just some text, not an image')), 'unsupported_image_format');
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>';
    const body = problem(await post('/api/v1/background/remove/base64', base64Body(svg)), 'unsupported_image_format');
    expect(body.detail).toMatch(/SVG/);
  });
  it('truncated JPEG → image_decode_failed', async () => {
    problem(await post('/api/v1/background/remove/base64', base64Body(jpeg.subarray(0, jpeg.length / 2))), 'image_decode_failed');
  });
  it('a PNG header claiming 100000×100000 → too_many_pixels, refused before decoding', async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#888' } }).png().toBuffer();
    png.writeUInt32BE(100_000, 16);
    png.writeUInt32BE(100_000, 20);
    problem(await post('/api/v1/background/remove/base64', base64Body(png)), 'too_many_pixels');
  });
  it('an image over the byte limit → payload_too_large (Base64, JSON body, multipart)', async () => {
    const small = await startTestApp({ maxImageBytes: 4096 });
    try {
      const token = await small.managedToken();
      const big = Buffer.alloc(5000, 1);
      const viaBase64 = await small.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: token }, payload: base64Body(big) });
      problem(viaBase64, 'payload_too_large');
      const hugeJson = JSON.stringify({ image_base64: 'A'.repeat(200_000) });
      const viaBody = await small.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: token, 'content-type': 'application/json' }, payload: hugeJson });
      problem(viaBody, 'payload_too_large');
      const { contentType, payload } = multipartUpload(big, 'big.jpg');
      const viaForm = await small.app.inject({
        method: 'POST',
        url: '/api/v1/background/remove/multipart',
        headers: { authorization: token, 'content-type': contentType },
        payload,
      });
      problem(viaForm, 'payload_too_large');
    } finally {
      await small.close();
    }
  });
});

describe('tokens', () => {
  it('no Authorization → missing_token', async () => {
    problem(await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', payload: base64Body(jpeg) }), 'missing_token');
  });
  it('garbage or unknown managed token → invalid_token', async () => {
    problem(await post('/api/v1/background/remove/base64', base64Body(jpeg), { authorization: 'nonsense' }), 'invalid_token');
    problem(await post('/api/v1/background/remove/base64', base64Body(jpeg), { authorization: `cut_mgd_${'A'.repeat(43)}` }), 'invalid_token');
  });
  it('a Token ID where a managed token belongs → user_token_not_accepted, with the way out', async () => {
    const { tokenId } = await t.tokens.createUserToken('errors-user-token');
    const body = problem(await post('/api/v1/background/remove/base64', base64Body(jpeg), { authorization: tokenId }), 'user_token_not_accepted');
    expect(body.detail).toMatch(/\/api\/v1\/auth\/token/);
    const noAuth = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { token: tokenId }, payload: base64Body(jpeg) });
    problem(noAuth, 'user_token_not_accepted');
  });
  it('an expired managed token → expired_token; a revoked user token → revoked_token', async () => {
    let now = new Date('2030-01-01T00:00:00Z');
    const clocked = await startTestApp({ managedTokenTtl: 60 }, { now: () => now });
    try {
      const { tokenId } = await clocked.tokens.createUserToken('clocked');
      const exchange = await clocked.app.inject({ method: 'POST', url: '/api/v1/auth/token', headers: { token: tokenId } });
      expect(exchange.statusCode).toBe(200);
      const managed = exchange.json().managed_token;
      now = new Date(now.getTime() + 61_000);
      const late = await clocked.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: managed }, payload: base64Body(jpeg) });
      problem(late, 'expired_token');
      const fresh = (await clocked.app.inject({ method: 'POST', url: '/api/v1/auth/token', headers: { token: tokenId } })).json().managed_token;
      await clocked.tokens.revokeUserToken('clocked');
      const revoked = await clocked.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: fresh }, payload: base64Body(jpeg) });
      problem(revoked, 'revoked_token');
      problem(await clocked.app.inject({ method: 'POST', url: '/api/v1/auth/token', headers: { token: tokenId } }), 'revoked_token');
    } finally {
      await clocked.close();
    }
  });
});

describe('image URLs', () => {
  it('non-http scheme or a private address → url_not_allowed', async () => {
    problem(await post('/api/v1/background/remove/url', { image_url: 'file:///etc/passwd' }), 'url_not_allowed');
    const strict = await startTestApp();
    try {
      const response = await strict.app.inject({
        method: 'POST',
        url: '/api/v1/background/remove/url',
        headers: { authorization: await strict.managedToken() },
        payload: { image_url: 'http://169.254.169.254/latest/meta-data/' },
      });
      problem(response, 'url_not_allowed');
    } finally {
      await strict.close();
    }
  });
  it('upstream 404 → upstream_fetch_failed', async () => {
    problem(await post('/api/v1/background/remove/url', { image_url: `${base}/missing.jpg` }), 'upstream_fetch_failed');
  });
  it('upstream that never answers → upstream_timeout', async () => {
    const short = await startTestApp({ urlAllowPrivate: true, urlTimeoutMs: 400 }, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    try {
      const response = await short.app.inject({ method: 'POST', url: '/api/v1/background/remove/url', headers: { authorization: await short.managedToken() }, payload: { image_url: `${base}/slow` } });
      problem(response, 'upstream_timeout');
    } finally {
      await short.close();
    }
  });
});

describe('the service itself', () => {
  const failing: Segmenter = { size: 1024, segment: async () => { throw new Error('secret internal detail /srv/model.onnx'); }, close: async () => {} };

  it('an unexpected failure → internal_error without the cause in the body', async () => {
    const broken = await startTestApp({}, { model: ModelService.ofSegmenter(failing) });
    try {
      const response = await broken.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: await broken.managedToken() }, payload: base64Body(jpeg) });
      const body = problem(response, 'internal_error');
      expect(JSON.stringify(body)).not.toMatch(/secret internal detail|model\.onnx/);
    } finally {
      await broken.close();
    }
  });

  it('crop asked of a photo with no subject → no_foreground; without crop, a transparent answer', async () => {
    const empty: Segmenter = { size: 1024, segment: async (pictures) => pictures.map(() => uniformMask(1024, 0)), close: async () => {} };
    const nothing = await startTestApp({ refine: false }, { model: ModelService.ofSegmenter(empty) });
    try {
      const token = await nothing.managedToken();
      const send = (options: object) => nothing.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: token }, payload: { ...base64Body(jpeg), ...options } });
      problem(await send({ crop: true }), 'no_foreground');
      const whole = await send({});
      expect(whole.statusCode).toBe(200);
      expect(whole.headers['x-foreground-width']).toBeUndefined();
      expect([whole.headers['x-width'], whole.headers['x-height']]).toEqual(['320', '240']);
      const alpha = await sharp(Buffer.from(whole.json().image_base64, 'base64')).extractChannel(3).stats();
      expect(alpha.channels[0].max).toBe(0);
    } finally {
      await nothing.close();
    }
  });

  it('model not loaded yet → not_ready with Retry-After', async () => {
    const loading = await startTestApp({}, { model: new ModelService({ dataDir: '/nonexistent', threads: 1, instances: 1 }) });
    try {
      const response = await loading.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: await loading.managedToken() }, payload: base64Body(jpeg) });
      problem(response, 'not_ready');
      expect(response.headers['retry-after']).toBeDefined();
      expect((await loading.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
      expect((await loading.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await loading.close();
    }
  });

  it('past the per-token limit → rate_limited; past the deadline → deadline_exceeded', async () => {
    const limited = await startTestApp({ rateLimit: 1 }, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    try {
      const token = await limited.managedToken();
      const send = () => limited.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: token }, payload: base64Body(jpeg) });
      expect((await send()).statusCode).toBe(200);
      problem(await send(), 'rate_limited');
    } finally {
      await limited.close();
    }
    const slow = await startTestApp({ requestTimeoutMs: 1000 }, { model: ModelService.ofSegmenter(fakeSegmenter(1500)) });
    try {
      const response = await slow.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: await slow.managedToken() }, payload: base64Body(jpeg) });
      problem(response, 'deadline_exceeded');
    } finally {
      await slow.close();
    }
  });

  // The real outage (PostgreSQL cut under a live app) is played in store-outage.test.ts when
  // DATABASE_URL is set; here the SQLite store's token lookup fails as node-postgres does when
  // nothing listens at the database's address.
  it('database unreachable → store_unavailable with Retry-After, the driver\'s words kept out', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'cutout-outage-'));
    const sqlite = await openSqliteStore(dataDir);
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' });
    const store = reportUnavailability({ ...sqlite, findManagedToken: async () => Promise.reject(refused) }, isPostgresUnreachable);
    const outage = await startTestApp({ dataDir }, { store, model: ModelService.ofSegmenter(fakeSegmenter()) });
    try {
      const response = await outage.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: await outage.managedToken() }, payload: base64Body(jpeg) });
      const body = problem(response, 'store_unavailable');
      expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(JSON.stringify(body)).not.toMatch(/ECONNREFUSED|10\.0\.0\.5/);
    } finally {
      await outage.close();
    }
  });

  it('model busy and queue full → queue_full with Retry-After, at once', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow: Segmenter = { size: 1024, segment: async (pictures) => (await gate, pictures.map(() => uniformMask(1024, 0))), close: async () => {} };
    const busy = await startTestApp({ inferenceConcurrency: 1, queueMax: 0 }, { model: ModelService.ofSegmenter(slow) });
    try {
      const token = await busy.managedToken();
      const send = () => busy.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: token }, payload: base64Body(jpeg) });
      const first = send();
      while (busy.app.queue.running === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      const second = await send();
      problem(second, 'queue_full');
      expect(Number(second.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      release();
      expect((await first).statusCode).toBe(200);
    } finally {
      release();
      await busy.close();
    }
  });

  it('an image whose estimate alone is over the memory budget → over_memory_budget with Retry-After, at once', async () => {
    const small = await startTestApp({ memoryBudget: 16 * 2 ** 20 }, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    try {
      const large = await makePhoto('jpeg', 3000, 2000);
      const refused = await small.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: await small.managedToken() }, payload: base64Body(large) });
      problem(refused, 'over_memory_budget');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    } finally {
      await small.close();
    }
  });
});

describe('jobs', () => {
  const jobBody = (path: string) => ({ images: [{ image_url: `${base}${path}` }] });

  it('the same Idempotency-Key with another body → idempotency_key_reused', async () => {
    const key = `errors-${Math.random()}`;
    expect((await post('/api/v1/jobs', jobBody('/missing-1'), { 'idempotency-key': key })).statusCode).toBe(202);
    problem(await post('/api/v1/jobs', jobBody('/missing-2'), { 'idempotency-key': key }), 'idempotency_key_reused');
  });

  it('the result of an item that failed → result_not_available; another account\'s or no job → not_found', async () => {
    const { id } = (await post('/api/v1/jobs', jobBody('/missing-3'))).json();
    const item = () => t.app.inject({ method: 'GET', url: `/api/v1/jobs/${id}/items/0`, headers: { authorization: auth } });
    while ((await item()).statusCode === 409 && (await item()).headers['retry-after']) await new Promise((resolve) => setTimeout(resolve, 20));
    problem(await item(), 'result_not_available');
    problem(await t.app.inject({ method: 'GET', url: '/api/v1/jobs/job_0000000000000000000000', headers: { authorization: auth } }), 'not_found');
  });

  it('a webhook_url from a token without a webhook signing secret → webhook_secret_missing', async () => {
    const refused = problem(await post('/api/v1/jobs', { ...jobBody('/missing-4'), webhook_url: `${base}/hook` }), 'webhook_secret_missing');
    expect(refused.detail).toMatch(/webhook-secret|dashboard/);
  });

  it('an image whose server died at each of its 5 starts → the item fails with too_many_starts, its job goes on', async () => {
    const held = await startTestApp({ urlAllowPrivate: true, urlTimeoutMs: 30_000 }, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    try {
      const token = await held.managedToken();
      // Draining, the runner starts nothing: the test plays the five starts whose server died.
      held.app.drain.begin();
      const made = await held.app.inject({ method: 'POST', url: '/api/v1/jobs', headers: { authorization: token }, payload: jobBody('/slow') });
      const { id } = made.json();
      const at = new Date().toISOString();
      for (let start = 0; start < 5; start++) {
        expect((await held.store.claimJobItem(id, at))?.kind).toBe('claimed');
        await held.store.requeueRunningJobItems();
      }
      expect((await held.store.claimJobItem(id, at))?.kind).toBe('gave_up');
      const job = (await held.app.inject({ method: 'GET', url: `/api/v1/jobs/${id}`, headers: { authorization: token } })).json();
      const failed = job.items[0];
      expect([job.status, failed.state, failed.attempts, failed.problem.status]).toEqual(['done', 'failed', 5, ERRORS.too_many_starts.status]);
      seen.add(failed.problem.code);
      expect(failed.problem.code).toBe('too_many_starts');
    } finally {
      await held.close();
    }
  });

  it('past a token\'s unfinished jobs → too_many_jobs with Retry-After', async () => {
    const capped = await startTestApp({ jobMaxOpen: 1, urlAllowPrivate: true, urlTimeoutMs: 30_000 }, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    try {
      const token = await capped.managedToken();
      const send = () => capped.app.inject({ method: 'POST', url: '/api/v1/jobs', headers: { authorization: token }, payload: jobBody('/slow') });
      expect((await send()).statusCode).toBe(202);
      const refused = problem(await send(), 'too_many_jobs');
      expect(refused.detail).toContain('unfinished');
    } finally {
      await capped.close();
    }
  });
});
