import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ERRORS, type ErrorCode } from '../src/errors.js';
import { corpus, type CorpusCase, type CorpusContext } from './bad-input-corpus.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { makePhoto } from './helpers/images.js';

type Injected = Awaited<ReturnType<TestApp['app']['inject']>>;

// Generous on a loaded machine, yet far under what decoding one of the bombs whole would
// cost (the smallest claims 7000×7000, 196 MB as RGBA; the others 100 MP and more).
const CHEAP_MS = 5000;
const CHEAP_RSS_BYTES = 300 * 1024 * 1024;

let t: TestApp;
let auth: string;
let validJpeg: Buffer;
let server: Server;
let context: CorpusContext;
const served = new Map<string, Buffer>();
const canaryHits: string[] = [];

beforeAll(async () => {
  // One app with the real model and the default limits; the url cases fetch from loopback, and
  // the corpus sends more requests than the per-token rate limit allows in a minute.
  t = await startTestApp({ urlAllowPrivate: true, rateLimit: 0 });
  auth = await t.managedToken();
  validJpeg = await makePhoto('jpeg', 64, 48);
  server = createServer((req, res) => {
    const bytes = served.get(req.url ?? '');
    if (bytes) return res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(bytes);
    if (req.url?.startsWith('/canary')) canaryHits.push(req.url);
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  context = {
    maxImageBytes: t.config.maxImageBytes,
    bodyLimit: t.app.initialConfig.bodyLimit!,
    serve(bytes) {
      const path = `/corpus/${served.size}`;
      served.set(path, bytes);
      return `${base}${path}`;
    },
    canaryUrl: `${base}/canary`,
  };
});

afterAll(async () => {
  server?.close();
  await t?.close();
});

const sendValid = () =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/background/remove/base64',
    headers: { authorization: auth },
    payload: { image_base64: validJpeg.toString('base64') },
  });

/** A refusal is problem+json with the expected status and code, the registry's title, and the request id. */
function expectProblem(response: Injected, status: number, code: ErrorCode, detail?: RegExp) {
  const body = response.json();
  expect({ status: response.statusCode, code: body.code }, body.detail).toEqual({ status, code });
  expect(ERRORS[code].status, 'the corpus and the error registry disagree on the status').toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(body).toMatchObject({ type: `urn:cutout:error:${code}`, title: ERRORS[code].title, status });
  expect(typeof body.detail).toBe('string');
  if (detail) expect(body.detail).toMatch(detail);
  expect(body.request_id).toBe(response.headers['x-request-id']);
  expect(JSON.stringify(body)).not.toMatch(/ at .*\.(ts|js):\d+/);
}

/** A success is `{ image_base64 }` holding an RGBA PNG, of the given size when one is given. */
async function expectCutout(response: Injected, size?: { width: number; height: number }) {
  expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  const body = response.json();
  expect(Object.keys(body)).toEqual(['image_base64']);
  const meta = await sharp(Buffer.from(body.image_base64, 'base64')).metadata();
  expect({ format: meta.format, channels: meta.channels }).toEqual({ format: 'png', channels: 4 });
  if (size) expect({ width: meta.width, height: meta.height }).toEqual(size);
}

/**
 * The model-sized decode's time from Server-Timing. (Its `decode` stage cannot be used: it
 * runs beside the model and ends with it, since the model run holds the event loop.)
 */
function preprocessMs(response: Injected): number {
  const timing = String(response.headers['server-timing'] ?? '');
  return Number(/\bpreprocess;dur=([\d.]+)/.exec(timing)?.[1] ?? NaN);
}

async function run(c: CorpusCase) {
  const request = await c.build(context);
  // Measured from a model at rest: a pass of an earlier case still running in the model's
  // thread would add its time and its memory to this case's.
  await vi.waitFor(() => expect(t.app.queue.running).toBe(0), { timeout: 30_000, interval: 10 });
  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  const response = await t.app.inject({
    method: 'POST',
    url: `/api/v1/background/remove/${c.endpoint}`,
    headers: { authorization: auth, ...request.headers },
    payload: request.payload,
  });
  const elapsed = performance.now() - started;
  const rssGrowth = process.memoryUsage().rss - rssBefore;

  if (c.knownBug) {
    // Pinned, so that a fix (or any other change) turns this red and the case gets its `expect`.
    const { status, code } = c.knownBug.answers;
    expect(response.statusCode, 'the known bug answers differently now: if it is fixed, remove knownBug from the case').toBe(status);
    expectProblem(response, status, code);
  } else {
    expect(response.statusCode, `never a 5xx: ${response.body.slice(0, 300)}`).toBeLessThan(500);
    if (c.expect.code) expectProblem(response, c.expect.status, c.expect.code, c.expect.detail);
    else await expectCutout(response, c.expect.size);
  }
  if (c.expect.cheap && response.statusCode === 200) {
    // A success takes the model's time (and ONNX Runtime grows its own memory over its first
    // runs), so only the decode is timed; the 8×8 size already shows one frame was read.
    expect(preprocessMs(response), 'ms spent decoding a hostile input').toBeLessThan(CHEAP_MS);
  } else if (c.expect.cheap) {
    expect(elapsed, 'ms spent refusing a hostile input').toBeLessThan(CHEAP_MS);
    expect(rssGrowth, 'bytes the process grew by while refusing it').toBeLessThan(CHEAP_RSS_BYTES);
  }
}

const answer = (a: { status: number; code?: string }) => `${a.status}${a.code ? ` ${a.code}` : ''}`;

describe('bad input corpus: every case gets its exact status and code, never a 5xx', () => {
  for (const c of corpus) {
    const bug = c.knownBug && ` [KNOWN BUG: answers ${answer(c.knownBug.answers)} today; ${c.knownBug.why}]`;
    // A model pass each for the successes: generous, for a loaded machine.
    it(`${c.endpoint}: ${c.name} → ${answer(c.expect)}${bug ?? ''}`, { timeout: 180_000 }, () => run(c));
  }
});

describe('after the corpus', () => {
  it('nothing fetched the URLs inside the SVGs', () => {
    expect(canaryHits).toEqual([]);
  });

  it('the app still answers a valid request', async () => {
    await expectCutout(await sendValid(), { width: 64, height: 48 });
    expect(t.app.queue.running).toBe(0);
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  });
});
