import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createServices } from '../src/create-services.js';
import { ModelService } from '../src/model/model-service.js';
import type { Segmenter } from '../src/model/segmenter.js';
import { openSqliteStore } from '../src/store/sqlite-store.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { fakeSegmenter, uniformMask } from './helpers/fake-segmenter.js';
import { makePhoto } from './helpers/images.js';
import { multipartBody } from '../scripts/lib/multipart-body.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// GET /metrics: Prometheus' text format from prom-client, Node's process metrics
// and Cutout's own; labels never carry a token, an account or a URL; CUTOUT_METRICS=false
// turns it off; CUTOUT_METRICS_TOKEN guards it; probes and scrapes are logged at debug.

let jpeg: Buffer;
beforeAll(async () => {
  jpeg = await makePhoto('jpeg', 64, 48);
});

const removal = (t: TestApp, authorization: string) =>
  t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization }, payload: { image_base64: jpeg.toString('base64') } });
const scrape = async (t: TestApp, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url: '/metrics', headers });

/** The value of one sample line (`name{labels} value`), or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = /\{(.*)\}/.exec(line)?.[1] ?? '';
    const found = Object.fromEntries([...labelText.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(line.split(' ').at(-1));
  }
  return undefined;
}

describe('GET /metrics', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ urlAllowPrivate: false }, { model: ModelService.ofSegmenter(fakeSegmenter(20)) });
  });
  afterAll(async () => t?.close());

  it('counts requests by route template and outcome, and times removals, without a token, an account or a URL in any label', async () => {
    const managed = await t.managedToken();
    expect((await removal(t, managed)).statusCode).toBe(200);
    expect((await removal(t, managed)).statusCode).toBe(200);
    expect((await removal(t, 'cut_mgd_' + 'x'.repeat(43))).statusCode).toBe(401);
    const url = 'http://169.254.169.254/secret-path.jpg';
    const refused = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/url', headers: { authorization: managed }, payload: { image_url: url } });
    expect(refused.json().code).toBe('url_not_allowed');
    expect((await t.app.inject({ method: 'GET', url: `/no/such/${managed}` })).statusCode).toBe(404);

    const answer = await scrape(t);
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = answer.body;
    const requests = (route: string, code: string) => sample(text, 'cutout_requests_total', { method: 'POST', route, code });
    expect(requests('/api/v1/background/remove/base64', 'ok')).toBe(2);
    expect(requests('/api/v1/background/remove/base64', 'invalid_token')).toBe(1);
    expect(requests('/api/v1/background/remove/url', 'url_not_allowed')).toBe(1);
    expect(sample(text, 'cutout_requests_total', { method: 'GET', route: 'unmatched', code: 'not_found' })).toBe(1);
    // Removals answered 200: one observation each, in seconds.
    expect(sample(text, 'cutout_removal_duration_seconds_count')).toBe(2);
    expect(sample(text, 'cutout_inference_seconds_count')).toBe(2);
    expect(sample(text, 'cutout_queue_wait_seconds_count')).toBe(2);
    expect(sample(text, 'cutout_inference_seconds_sum')).toBeGreaterThan(2 * 0.015);
    expect(sample(text, 'cutout_inference_seconds_sum')).toBeLessThan(10);
    expect(sample(text, 'cutout_model_passes_total', { for: 'interactive' })).toBe(2);
    expect(sample(text, 'cutout_model_passes_total', { for: 'job' })).toBe(0);
    expect(sample(text, 'cutout_queue_waiting_images')).toBe(0);
    expect(sample(text, 'cutout_model_running')).toBe(0);
    // Node's own, from prom-client's defaults.
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sample(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);

    expect(text).not.toContain(managed);
    expect(text).not.toContain('cut_mgd_');
    expect(text).not.toContain('169.254');
    expect(text).not.toContain('secret-path');
    expect(text).not.toMatch(/test-[a-z0-9]+/); // the user token's name
  });

  it('times the removals of every wire: the native API, remove.bg\'s and Photoroom\'s routes', async () => {
    const wires = await startTestApp({}, { model: ModelService.ofSegmenter(fakeSegmenter(20)) });
    try {
      const key = (await wires.tokens.createUserToken('wires')).tokenId;
      const form = multipartBody([{ name: 'image_file', filename: 'a.jpg', contentType: 'image/jpeg', data: jpeg }]);
      const answers = [
        await removal(wires, await wires.managedToken()),
        await wires.app.inject({ method: 'POST', url: '/v1.0/removebg', headers: { 'x-api-key': key }, payload: { image_file_b64: jpeg.toString('base64') } }),
        await wires.app.inject({ method: 'POST', url: '/v1/segment', headers: { 'x-api-key': key, 'content-type': form.contentType }, payload: form.body }),
      ];
      expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200, 200]);
      for (const answer of answers) expect(answer.headers['x-looks']).toBe('1');
      const text = (await scrape(wires)).body;
      for (const route of ['/api/v1/background/remove/base64', '/v1.0/removebg', '/v1/segment']) {
        expect(sample(text, 'cutout_requests_total', { method: 'POST', route, code: 'ok' }), route).toBe(1);
      }
      expect(sample(text, 'cutout_removal_duration_seconds_count')).toBe(3);
      expect(sample(text, 'cutout_inference_seconds_count')).toBe(3);
      expect(sample(text, 'cutout_queue_wait_seconds_count')).toBe(3);
      expect(sample(text, 'cutout_inference_seconds_sum')).toBeGreaterThan(3 * 0.015);
    } finally {
      await wires.close();
    }
  });

  it('shows the images waiting for the model and the run in progress as they are', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held: Segmenter = { size: 1024, segment: async (pictures) => (await gate, pictures.map(() => uniformMask(1024, 255))), close: async () => {} };
    const busy = await startTestApp({ inferenceConcurrency: 1 }, { model: ModelService.ofSegmenter(held) });
    try {
      const managed = await busy.managedToken();
      const answers = [removal(busy, managed), removal(busy, managed), removal(busy, managed)];
      while (busy.app.queue.queued < 2) await new Promise((resolve) => setTimeout(resolve, 10));
      const text = (await scrape(busy)).body;
      expect(sample(text, 'cutout_queue_waiting_images')).toBe(2);
      expect(sample(text, 'cutout_model_running')).toBe(1);
      // The three hold their estimates of the budget; none waits for memory.
      expect(sample(text, 'cutout_memory_reserved_bytes')).toBe(busy.app.removals.memory.reserved);
      expect(sample(text, 'cutout_memory_reserved_bytes')).toBeGreaterThan(3 * 1024 * 1024);
      expect(sample(text, 'cutout_memory_waiting_images')).toBe(0);
      // Hold the model past the 0.05 s bucket, so the two queued ones have surely waited longer.
      await new Promise((resolve) => setTimeout(resolve, 60));
      release();
      for (const answer of await Promise.all(answers)) expect(answer.statusCode).toBe(200);
      const after = (await scrape(busy)).body;
      expect(sample(after, 'cutout_queue_waiting_images')).toBe(0);
      expect(sample(after, 'cutout_memory_reserved_bytes')).toBe(0);
      expect(sample(after, 'cutout_model_passes_total', { for: 'interactive' })).toBe(3);
      // Two of the three waited for the model: the histogram saw it.
      expect(sample(after, 'cutout_queue_wait_seconds_bucket', { le: '0.05' })).toBeLessThanOrEqual(1);
      expect(sample(after, 'cutout_queue_wait_seconds_count')).toBe(3);
    } finally {
      release();
      await busy.close();
    }
  });
});

describe('CUTOUT_METRICS and CUTOUT_METRICS_TOKEN', () => {
  it('CUTOUT_METRICS=false: no /metrics (404 not_found), requests answered as before', async () => {
    const t = await startTestApp(loadConfig({ CUTOUT_METRICS: 'false' }), { model: ModelService.ofSegmenter(fakeSegmenter()) });
    try {
      const answer = await scrape(t);
      expect(answer.statusCode).toBe(404);
      expect(answer.json().code).toBe('not_found');
      expect(t.app.metrics).toBeUndefined();
      expect((await removal(t, await t.managedToken())).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('with a token: refused without it (401 missing_token) or with another (401 invalid_token), served with it', async () => {
    const token = 'metrics-token-0123456789abcdef';
    const t = await startTestApp({ metricsToken: token }, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    try {
      expect((await scrape(t)).json().code).toBe('missing_token');
      const wrong = await scrape(t, { authorization: `Bearer ${token}x` });
      expect([wrong.statusCode, wrong.json().code]).toEqual([401, 'invalid_token']);
      const right = await scrape(t, { authorization: `Bearer ${token}` });
      expect(right.statusCode).toBe(200);
      expect(right.body).toContain('cutout_requests_total');
      expect(right.body).not.toContain(token);
      // The token guards /metrics only.
      expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('probe logging', () => {
  /** An app whose log lines (at `level`) are kept. */
  async function loggedApp(level: 'info' | 'debug') {
    const dataDir = await mkdtemp(join(tmpdir(), 'cutout-probe-log-'));
    const config = loadConfig({}, { dataDir, logLevel: level });
    const store = await openSqliteStore(dataDir);
    const { services, close } = createServices(config, store, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    const lines: { level: number; msg: string; req?: { url: string }; reqId?: string }[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n')) if (line.trim()) lines.push(JSON.parse(line));
        done();
      },
    });
    const app = await buildApp(services, { level, stream });
    return {
      app,
      lines,
      async close() {
        await app.close();
        await store.close();
        await close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  }
  /** GET `url` with a request id made of its path's letters, to find its log lines. */
  const send = (app: Awaited<ReturnType<typeof loggedApp>>['app'], url: string) => app.inject({ method: 'GET', url, headers: { 'x-request-id': url.replace(/\W/g, '') } });

  it('logs health checks and scrapes at debug, every other request at info as before', async () => {
    const t = await loggedApp('info');
    try {
      for (const url of ['/healthz', '/readyz', '/metrics', '/api/v1/openapi.json']) expect((await send(t.app, url)).statusCode).toBe(200);
      const requestLines = (reqId: string) => t.lines.filter((line) => line.reqId === reqId);
      for (const probe of ['healthz', 'readyz', 'metrics']) expect(requestLines(probe)).toEqual([]);
      expect(requestLines('apiv1openapijson').map((line) => [line.level, line.msg])).toEqual([
        [30, 'incoming request'],
        [30, 'request completed'],
      ]);
    } finally {
      await t.close();
    }
    const debug = await loggedApp('debug');
    try {
      await send(debug.app, '/readyz');
      expect(debug.lines.filter((line) => line.reqId === 'readyz').map((line) => [line.level, line.msg])).toEqual([
        [20, 'incoming request'],
        [20, 'request completed'],
      ]);
    } finally {
      await debug.close();
    }
  });
});
