import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { unzipSync, zipSync } from 'fflate';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ModelService } from '../src/model/model-service.js';
import { openSqliteStore } from '../src/store/sqlite-store.js';
import { StoreUnavailableError } from '../src/store/store-unavailable.js';
import { multipartBody, type FormPart } from '../scripts/lib/multipart-body.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { makePhoto } from './helpers/images.js';
import { squareSegmenter } from './helpers/square-segmenter.js';

/**
 * Jobs on one node: made over HTTP, worked through by the embedded runner with a tiny model,
 * from photos a local server hands out, on a real SQLite store.
 */

let photos: Server;
let base: string;
let png: Buffer;
const fetched = new Map<string, number>();

beforeAll(async () => {
  png = await makePhoto('png', 40, 30);
  const jpeg = await makePhoto('jpeg', 40, 30);
  photos = createServer((request, response) => {
    const path = request.url ?? '';
    fetched.set(path, (fetched.get(path) ?? 0) + 1);
    if (path.startsWith('/photo/')) return response.writeHead(200, { 'content-type': 'image/png' }).end(png);
    if (path === '/broken.jpg') return response.writeHead(200, { 'content-type': 'image/jpeg' }).end(jpeg.subarray(0, 200));
    response.writeHead(404).end('no');
  });
  await new Promise<void>((resolve) => photos.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(photos.address() as AddressInfo).port}`;
});
afterAll(() => photos?.close());

const opened: TestApp[] = [];
afterEach(async () => {
  for (const t of opened.splice(0).reverse()) await t.close();
});

async function jobApp(overrides: Parameters<typeof startTestApp>[0] = {}, segmenter = squareSegmenter()) {
  const t = await startTestApp({ urlAllowPrivate: true, rateLimit: 0, ...overrides }, { model: ModelService.ofSegmenter(segmenter) });
  opened.push(t);
  return { t, segmenter, auth: await t.managedToken() };
}

type Injected = Awaited<ReturnType<TestApp['app']['inject']>>;

const createJob = (t: TestApp, auth: string, payload: Record<string, unknown>, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: '/api/v1/jobs', headers: { authorization: auth, ...headers }, payload });
const get = (t: TestApp, auth: string, url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: auth } });
const images = (...paths: string[]) => paths.map((path) => ({ image_url: `${base}${path}` }));

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function finished(t: TestApp, auth: string, id: string) {
  let job: Injected | undefined;
  await until(async () => {
    job = await get(t, auth, `/api/v1/jobs/${id}`);
    return ['done', 'cancelled'].includes(job.json().status);
  }, `job ${id} to finish`);
  return job!.json();
}

/** The token's usage as the dashboard would count it, read straight from the database file. */
function usage(t: TestApp) {
  const database = new SQLite(join(t.config.dataDir, 'cutout.sqlite'), { readonly: true });
  try {
    return database.prepare('select coalesce(sum(succeeded), 0) as succeeded, coalesce(sum(refused), 0) as refused, coalesce(sum(failed), 0) as failed from usage_daily').get();
  } finally {
    database.close();
  }
}

describe('a job', () => {
  it('is made at once, run, done, and its results downloaded one by one and as one zip', async () => {
    const { t, auth } = await jobApp();
    const made = await createJob(t, auth, {
      images: [
        { image_url: `${base}/photo/a.png`, id: 'sku-1' },
        { image_url: `${base}/photo/b.png`, id: '../etc/pass wd' },
        { image_url: `${base}/photo/c.png` },
      ],
      format: 'webp',
      max_width: 20,
    });
    expect(made.statusCode, made.body).toBe(202);
    const summary = made.json();
    expect(summary).toMatchObject({ status: 'queued', status_url: `/api/v1/jobs/${summary.id}`, counts: { total: 3, queued: 3 }, options: { format: 'webp', max_width: 20 } });
    expect(summary.id).toMatch(/^job_[A-Za-z0-9_-]{22}$/);
    expect(made.headers.location).toBe(summary.status_url);

    const job = await finished(t, auth, summary.id);
    expect(job).toMatchObject({ status: 'done', counts: { total: 3, succeeded: 3, queued: 0, running: 0, failed: 0 } });
    expect(job.finished_at).toEqual(expect.any(String));
    expect(job.items.map((item: { state: string; content_type: string }) => [item.state, item.content_type])).toEqual(Array(3).fill(['succeeded', 'image/webp']));

    const one = await get(t, auth, job.items[0].result_url);
    expect(one.statusCode).toBe(200);
    expect(one.headers['content-type']).toBe('image/webp');
    // The answer the URL endpoint gives for the same image and options, byte for byte.
    const sync = await t.app.inject({
      method: 'POST',
      url: '/api/v1/background/remove/url',
      headers: { authorization: auth, accept: 'image/*' },
      payload: { image_url: `${base}/photo/a.png`, format: 'webp', max_width: 20 },
    });
    expect(one.rawPayload).toEqual(sync.rawPayload);
    const cut = await sharp(one.rawPayload).metadata();
    expect([cut.format, cut.width, cut.height]).toEqual(['webp', Number(sync.headers['x-width']), Number(sync.headers['x-height'])]);
    expect([cut.width, cut.height]).toEqual([20, 15]);

    const zip = await get(t, auth, job.results_url);
    expect(zip.statusCode).toBe(200);
    expect(zip.headers['content-type']).toBe('application/zip');
    const files = unzipSync(zip.rawPayload);
    expect(Object.keys(files).sort()).toEqual(['2.webp', '_etc_pass_wd.webp', 'sku-1.webp']);
    expect(Buffer.from(files['sku-1.webp'])).toEqual(one.rawPayload);

    expect(usage(t)).toEqual({ succeeded: 4, refused: 0, failed: 0 });
  });

  it('fails an item alone, with the code the URL endpoint gives for the same image', async () => {
    const { t, auth } = await jobApp();
    const made = await createJob(t, auth, { images: images('/photo/ok.png', '/broken.jpg', '/missing.png') });
    const job = await finished(t, auth, made.json().id);
    expect(job.counts).toMatchObject({ succeeded: 1, failed: 2 });
    for (const item of job.items.slice(1)) {
      const sync = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/url', headers: { authorization: auth }, payload: { image_url: item.image_url } });
      expect(item.problem, item.image_url).toEqual({ code: sync.json().code, status: sync.statusCode, detail: expect.any(String) });
    }
    expect(job.items.map((item: { problem: { code: string } | null }) => item.problem?.code ?? null)).toEqual([null, 'image_decode_failed', 'upstream_fetch_failed']);
    const failedResult = await get(t, auth, `/api/v1/jobs/${job.id}/items/1`);
    expect([failedResult.statusCode, failedResult.json().code]).toEqual([409, 'result_not_available']);
    // The job's 3 and the 2 synchronous requests: each counted as such a request is.
    expect(usage(t)).toEqual({ succeeded: 1, refused: 2, failed: 2 });
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toContain('cutout_job_items_total{state="succeeded",code=""} 1');
    expect(metrics).toContain('cutout_job_items_total{state="failed",code="image_decode_failed"} 1');
    expect(metrics).toContain('cutout_job_items_total{state="failed",code="upstream_fetch_failed"} 1');
  });

  it('refuses a bad option as the removal endpoints do, and an empty or too long list', async () => {
    const { t, auth } = await jobApp();
    const bad = await createJob(t, auth, { images: images('/photo/a.png'), format: 'gif' });
    const sync = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/url', headers: { authorization: auth }, payload: { image_url: `${base}/photo/a.png`, format: 'gif' } });
    expect([bad.statusCode, bad.json().code, bad.json().detail]).toEqual([400, sync.json().code, sync.json().detail]);
    expect((await createJob(t, auth, { images: [] })).statusCode).toBe(400);
    expect((await createJob(t, auth, { images: images(...Array.from({ length: 10_001 }, (_, n) => `/photo/${n}.png`)) })).statusCode).toBe(400);
    expect((await createJob(t, auth, { images: [{ id: 'no-url' }] })).statusCode).toBe(400);
    const text = await t.app.inject({ method: 'POST', url: '/api/v1/jobs', headers: { authorization: auth, 'content-type': 'text/plain' }, payload: 'x' });
    expect(text.statusCode).toBe(415);
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/jobs', payload: { images: images('/photo/a.png') } })).statusCode).toBe(401);
  });

  it('pages its items', async () => {
    const { t, auth } = await jobApp();
    const made = await createJob(t, auth, { images: images('/photo/0.png', '/photo/1.png', '/photo/2.png', '/photo/3.png', '/photo/4.png') });
    const { id } = made.json();
    const first = (await get(t, auth, `/api/v1/jobs/${id}?per_page=2`)).json();
    expect(first.items.map((item: { index: number }) => item.index)).toEqual([0, 1]);
    expect(first.next_page).toBe(`/api/v1/jobs/${id}?page=2&per_page=2`);
    const last = (await get(t, auth, `/api/v1/jobs/${id}?page=3&per_page=2`)).json();
    expect([last.items.map((item: { index: number }) => item.index), last.next_page]).toEqual([[4], null]);
    expect((await get(t, auth, `/api/v1/jobs/${id}?per_page=0`)).statusCode).toBe(400);
  });
});

describe('interactive requests first', () => {
  it('with CUTOUT_JOB_MIN_SHARE 0, starts no item while the model is taken by a request, and goes on once it is free', async () => {
    const { t, auth, segmenter } = await jobApp({ jobMinShare: 0 });
    // A synchronous request holding the model, as one does while it prepares its photo.
    const release = t.app.queue.claim()!;
    const { id } = (await createJob(t, auth, { images: images('/photo/i0.png', '/photo/i1.png') })).json();
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect([segmenter.runs, (await get(t, auth, `/api/v1/jobs/${id}`)).json().counts.queued]).toEqual([0, 2]);
    release();
    expect((await finished(t, auth, id)).counts.succeeded).toBe(2);
  });

  it('takes its share of the passes while requests keep the model busy: one in round(1 / CUTOUT_JOB_MIN_SHARE)', async () => {
    const { t, auth, segmenter } = await jobApp({ jobMinShare: 0.5 });
    // Requests in the model's queue, each holding its pass until the test lets it end.
    const held: (() => void)[] = [];
    const request = () => t.app.queue.run(() => new Promise<void>((resolve) => held.push(resolve)));
    const requests = [request(), request(), request(), request()];
    const { id } = (await createJob(t, auth, { images: images('/photo/s0.png', '/photo/s1.png') })).json();
    // The runner starts one image while the model is busy; it waits behind the first request.
    await until(() => t.app.queue.jobWaitsForShare, 'an image of the job to wait for its share');
    expect(held).toHaveLength(1);
    held.shift()!();
    // The second pass is the next request's (one in two), the third the job's.
    await until(() => held.length === 1, 'the second request to run');
    expect(segmenter.runs).toBe(0);
    held.shift()!();
    await until(() => segmenter.runs === 1, "the job's image to run");
    expect(t.app.queue.passesFor).toEqual({ interactive: 2, job: 1 });
    // The job's second image waits again for its turn; the requests go on.
    await until(() => held.length === 1, 'the third request to run');
    // While that request holds the model, its owner sees the job wait behind the requests, at
    // its share, with the one image that ended in the window.
    await until(async () => (await get(t, auth, `/api/v1/jobs/${id}`)).json().counts.succeeded === 1, 'the first image to be recorded');
    expect((await get(t, auth, `/api/v1/jobs/${id}`)).json().progress).toMatchObject({ pace: 'minimum_share', minimum_share: 0.5, images_per_minute: 0.2 });
    for (let ended = 0; ended < 2; ended++) {
      held.shift()!();
      await until(() => held.length === 1 || t.app.queue.passesFor.interactive === 4, 'the next pass');
    }
    await Promise.all(requests);
    const done = await finished(t, auth, id);
    expect([done.counts.succeeded, done.progress]).toEqual([2, null]);
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^cutout_model_passes_total\{for="job"\} 2$/m);
  });

  it('starts no item once the process drains', async () => {
    const { t, auth, segmenter } = await jobApp();
    t.app.drain.begin();
    const { id } = (await createJob(t, auth, { images: images('/photo/d0.png') })).json();
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect([segmenter.runs, (await get(t, auth, `/api/v1/jobs/${id}`)).json().counts.queued]).toEqual([0, 1]);
    // The gauge counts it too, read from the store at the scrape.
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^cutout_job_items_queued 1$/m);
  });
});

describe('who sees a job', () => {
  it('is the account of the token that made it: another account gets 404 everywhere', async () => {
    const { t, auth } = await jobApp();
    // The first account adopts the test's token; a second token of the same account, and one of another.
    const first = await t.store.createAccount({ id: randomUUID(), email: 'one@example.com', passwordHash: 'x', createdAt: new Date().toISOString() });
    const second = await t.store.createAccount({ id: randomUUID(), email: 'two@example.com', passwordHash: 'x', createdAt: new Date().toISOString() });
    const managed = async (accountId: string) => (await t.tokens.exchange((await t.tokens.createUserToken(randomUUID(), null, accountId)).tokenId)).managedToken;
    const colleague = await managed(first.id);
    const stranger = await managed(second.id);

    const { id } = (await createJob(t, auth, { images: images('/photo/a.png') })).json();
    await finished(t, auth, id);
    expect((await get(t, colleague, `/api/v1/jobs/${id}`)).statusCode).toBe(200);
    for (const url of [`/api/v1/jobs/${id}`, `/api/v1/jobs/${id}/items/0`, `/api/v1/jobs/${id}/results`, '/api/v1/jobs/job_0000000000000000000000']) {
      const answer = await get(t, stranger, url);
      expect([answer.statusCode, answer.json().code], url).toEqual([404, 'not_found']);
    }
    const cancel = await t.app.inject({ method: 'DELETE', url: `/api/v1/jobs/${id}`, headers: { authorization: stranger } });
    expect(cancel.statusCode).toBe(404);
    expect((await get(t, auth, `/api/v1/jobs/${id}`)).json().status).toBe('done');
    // The list: the account's tokens see the job, the other account's does not; its limit is bounded.
    const listed = async (token: string) => (await get(t, token, '/api/v1/jobs')).json().jobs.map((job: { id: string }) => job.id);
    expect(await listed(colleague)).toEqual([id]);
    expect(await listed(auth)).toEqual([id]);
    expect(await listed(stranger)).toEqual([]);
    expect((await get(t, auth, '/api/v1/jobs?limit=101')).json().code).toBe('invalid_request');
  });
});

describe('Idempotency-Key', () => {
  it('answers the same job for the same key and body, refuses another body, and makes a new job for a new key', async () => {
    const { t, auth } = await jobApp();
    const body = { images: images('/photo/a.png'), format: 'png', crop: true };
    const first = await createJob(t, auth, body, { 'idempotency-key': 'order-17' });
    // The same fields in another order are the same body.
    const again = await createJob(t, auth, { crop: true, format: 'png', images: body.images }, { 'idempotency-key': 'order-17' });
    expect([first.statusCode, again.statusCode]).toEqual([202, 202]);
    expect(again.json().id).toBe(first.json().id);
    const other = await createJob(t, auth, { ...body, crop: false }, { 'idempotency-key': 'order-17' });
    expect([other.statusCode, other.json().code]).toEqual([422, 'idempotency_key_reused']);
    const fresh = await createJob(t, auth, body, { 'idempotency-key': 'order-18' });
    expect(fresh.json().id).not.toBe(first.json().id);
    expect((await createJob(t, auth, body, { 'idempotency-key': 'a key with spaces' })).statusCode).toBe(400);
  });
});

describe('the caps of one token', () => {
  it('refuses one job too many, and images past the waiting limit, with 429 and Retry-After', async () => {
    const { t, auth, segmenter } = await jobApp({ jobMaxOpen: 2, jobMaxQueuedItems: 3 });
    segmenter.hold();
    const one = await createJob(t, auth, { images: images('/photo/1.png', '/photo/2.png') });
    expect(one.statusCode).toBe(202);
    const tooMany = await createJob(t, auth, { images: images('/photo/3.png', '/photo/4.png', '/photo/5.png') });
    expect([tooMany.statusCode, tooMany.json().code, tooMany.headers['retry-after']]).toEqual([429, 'too_many_jobs', '30']);
    expect((await createJob(t, auth, { images: images('/photo/3.png') })).statusCode).toBe(202);
    const third = await createJob(t, auth, { images: images('/photo/4.png') });
    expect([third.statusCode, third.json().code]).toEqual([429, 'too_many_jobs']);
    segmenter.release();
  });
});

describe('cancelling', () => {
  it('stops the waiting and running items, and keeps the finished results downloadable', async () => {
    const { t, auth, segmenter } = await jobApp();
    segmenter.hold(1);
    const { id } = (await createJob(t, auth, { images: images('/photo/0.png', '/photo/1.png', '/photo/2.png') })).json();
    await until(() => segmenter.runs >= 2, 'the second item to reach the model');
    const cancelled = await t.app.inject({ method: 'DELETE', url: `/api/v1/jobs/${id}`, headers: { authorization: auth } });
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.json()).toMatchObject({ status: 'cancelled', counts: { succeeded: 1, cancelled: 2, queued: 0, running: 0 } });
    segmenter.release();
    await until(() => t.app.jobs.runner.inFlight === 0, 'the runner to let go');
    const job = (await get(t, auth, `/api/v1/jobs/${id}`)).json();
    expect(job.counts).toMatchObject({ succeeded: 1, cancelled: 2 });
    expect((await get(t, auth, `/api/v1/jobs/${id}/items/0`)).statusCode).toBe(200);
    expect((await get(t, auth, `/api/v1/jobs/${id}/items/1`)).json().code).toBe('result_not_available');
    expect(Object.keys(unzipSync((await get(t, auth, `/api/v1/jobs/${id}/results`)).rawPayload))).toEqual(['0.png']);
    expect(segmenter.runs).toBe(2);
    expect(usage(t)).toEqual({ succeeded: 1, refused: 0, failed: 0 });
  });
});

describe('a restart', () => {
  it('resumes the unfinished items on the same data directory, and counts each item once', async () => {
    const { t: before, auth, segmenter } = await jobApp();
    segmenter.hold(1);
    const { id } = (await createJob(before, auth, { images: images('/photo/r0.png', '/photo/r1.png', '/photo/r2.png') })).json();
    await until(() => segmenter.runs >= 2, 'the second item to be running');
    await until(async () => (await get(before, auth, `/api/v1/jobs/${id}`)).json().counts.succeeded === 1, 'the first item to be saved');
    expect((await get(before, auth, `/api/v1/jobs/${id}`)).json().counts).toMatchObject({ succeeded: 1, running: 1, queued: 1 });

    // The first process is stuck (as if gone); a second one starts on its data directory.
    const after = await startTestApp({ dataDir: before.config.dataDir, urlAllowPrivate: true, rateLimit: 0 }, { model: ModelService.ofSegmenter(squareSegmenter()) });
    opened.push(after);
    await after.app.ready();
    const job = await finished(after, auth, id);
    expect(job.counts).toMatchObject({ succeeded: 3, failed: 0 });
    expect(usage(after)).toEqual({ succeeded: 3, refused: 0, failed: 0 });

    // The first process's claim on the second item ends late: it no longer holds the item, so nothing is counted again.
    segmenter.release();
    await until(() => before.app.jobs.runner.inFlight === 0, 'the first runner to end its item');
    expect(usage(after)).toEqual({ succeeded: 3, refused: 0, failed: 0 });
    expect((await get(after, auth, `/api/v1/jobs/${id}`)).json().counts).toMatchObject({ succeeded: 3 });
  });
});

describe('a store away at start-up', () => {
  it('does not stop the server from starting; the runner queues the left items again once it is back', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'cutout-jobs-'));
    const sqlite = await openSqliteStore(dataDir);
    let away = true;
    const store = {
      ...sqlite,
      requeueRunningJobItems: async () => {
        if (away) throw new StoreUnavailableError({ cause: new Error('connection refused') });
        return sqlite.requeueRunningJobItems();
      },
    };
    const t = await startTestApp({ dataDir, urlAllowPrivate: true, rateLimit: 0 }, { store, model: ModelService.ofSegmenter(squareSegmenter()) });
    opened.push(t);
    await t.app.ready();
    const auth = await t.managedToken();
    const { id } = (await createJob(t, auth, { images: images('/photo/s.png') })).json();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await get(t, auth, `/api/v1/jobs/${id}`)).json().counts.queued).toBe(1);
    away = false;
    expect((await finished(t, auth, id)).counts.succeeded).toBe(1);
  });
});

describe('retention', () => {
  it('deletes a finished job and its results once CUTOUT_JOB_RETENTION has passed', async () => {
    const { t, auth } = await jobApp({ jobRetention: 3600 });
    const { id } = (await createJob(t, auth, { images: images('/photo/a.png') })).json();
    await finished(t, auth, id);
    const folder = join(t.config.dataDir, 'jobs', id);
    expect(existsSync(folder)).toBe(true);
    expect(await t.app.jobs.sweeper.sweep(new Date(Date.now() + 3500 * 1000))).toBe(0);
    expect(await t.app.jobs.sweeper.sweep(new Date(Date.now() + 3700 * 1000))).toBe(1);
    expect(existsSync(folder)).toBe(false);
    expect((await get(t, auth, `/api/v1/jobs/${id}`)).statusCode).toBe(404);
  });
});

describe('an upload', () => {
  const upload = (t: TestApp, auth: string, parts: FormPart[]) => {
    const form = multipartBody(parts);
    return t.app.inject({ method: 'POST', url: '/api/v1/jobs/multipart', headers: { authorization: auth, 'content-type': form.contentType }, payload: form.body });
  };
  const archive = (files: Record<string, Uint8Array>) => ({ name: 'files', filename: 'photos.zip', contentType: 'application/zip', data: zipSync(files) });
  /** What is left of uploads under the data directory, and how many jobs the store has. */
  const leftovers = (t: TestApp) => {
    const database = new SQLite(join(t.config.dataDir, 'cutout.sqlite'), { readonly: true });
    try {
      const jobs = join(t.config.dataDir, 'jobs');
      return { files: existsSync(jobs) ? readdirSync(jobs, { recursive: true }) : [], jobs: (database.prepare('select count(*) as n from jobs').get() as { n: number }).n };
    } finally {
      database.close();
    }
  };

  it('takes image files and zip archives of them, runs them, and names each result after its file', async () => {
    const { t, auth } = await jobApp();
    const made = await upload(t, auth, [
      { name: 'files', filename: 'front.png', contentType: 'image/png', data: png },
      { name: 'files', filename: 'back.png', contentType: 'image/png', data: png },
      archive({ 'shots/left.png': png, 'shots/right.png': png, '__MACOSX/shots/._left.png': new Uint8Array([1]), 'shots/': new Uint8Array(0) }),
      { name: 'format', data: 'webp' },
    ]);
    expect(made.statusCode, made.body).toBe(202);
    expect(made.json()).toMatchObject({ counts: { total: 4 }, options: { format: 'webp' } });
    const job = await finished(t, auth, made.json().id);
    expect(job.counts.succeeded).toBe(4);
    expect(job.items.map((item: { id: string; image_url: string | null }) => [item.id, item.image_url])).toEqual([
      ['front', null],
      ['back', null],
      ['left', null],
      ['right', null],
    ]);
    const zip = unzipSync((await get(t, auth, job.results_url)).rawPayload);
    expect(Object.keys(zip).sort()).toEqual(['back.webp', 'front.webp', 'left.webp', 'right.webp']);
    // The uploaded images are deleted once their results are kept.
    expect(readdirSync(join(t.config.dataDir, 'jobs', job.id, 'inputs'))).toEqual([]);
  });

  it('refuses an archive with a path out of it, or an archive in it, and keeps nothing', async () => {
    const { t, auth } = await jobApp();
    const suspects: Record<string, Uint8Array>[] = [{ 'a.png': png, '../evil.png': png }, { 'a.png': png, 'dir/../../evil.png': png }, { 'inner.zip': zipSync({ 'b.png': png }) }, { 'b.png': zipSync({ 'c.png': png }) }];
    const why = [/points outside it/, /points outside it/, /holds another archive/, /holds another archive/];
    for (const [at, files] of suspects.entries()) {
      const refused = await upload(t, auth, [archive(files)]);
      expect([refused.statusCode, refused.json().code], Object.keys(files).join()).toEqual([400, 'invalid_request']);
      expect(refused.json().detail).toMatch(why[at]);
    }
    expect(leftovers(t)).toEqual({ files: [], jobs: 0 });
  });

  it('refuses an image over the byte limit, inflated or not, an upload over its limit, and too many images', async () => {
    const { t, auth } = await jobApp({ maxImageBytes: 4096, jobMaxUploadBytes: 10_000 });
    const zeros = (n: number) => new Uint8Array(n);
    // 8 KB of zeros compress to a few dozen bytes: the limit counts them inflated.
    for (const parts of [[archive({ 'big.png': zeros(8192) })], [archive({ 'a.png': zeros(3000), 'b.png': zeros(3000), 'c.png': zeros(3000), 'd.png': zeros(3000) })], [{ name: 'files', filename: 'big.png', data: zeros(5000) }]]) {
      const refused = await upload(t, auth, parts);
      expect([refused.statusCode, refused.json().code]).toEqual([413, 'payload_too_large']);
    }
    expect(leftovers(t)).toEqual({ files: [], jobs: 0 });
    expect((await upload(t, auth, [{ name: 'format', data: 'webp' }])).statusCode).toBe(400);
  });

  it('refuses more than 10,000 images, and keeps nothing', async () => {
    const { t, auth } = await jobApp();
    const many = Object.fromEntries(Array.from({ length: 10_001 }, (_, n) => [`${n}.png`, new Uint8Array([n % 256])]));
    const tooMany = await upload(t, auth, [archive(many)]);
    expect([tooMany.statusCode, tooMany.json().code, tooMany.json().detail]).toEqual([400, 'invalid_request', 'A job may hold at most 10000 images.']);
    expect(leftovers(t)).toEqual({ files: [], jobs: 0 });
  });
});
