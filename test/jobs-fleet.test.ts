import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pino from 'pino';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TokenService } from '../src/auth/token-service.js';
import { FleetRunner } from '../src/jobs/fleet-runner.js';
import { FleetUpkeep } from '../src/jobs/fleet-upkeep.js';
import { ModelService } from '../src/model/model-service.js';
import { openPostgresStore } from '../src/store/postgres-store.js';
import type { Store } from '../src/store/store.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { makePhoto } from './helpers/images.js';
import { squareSegmenter, type SquareSegmenter } from './helpers/square-segmenter.js';
import { exchangeOverHttp, killLeftoverChildren, send, startServer, type ServerProcess } from './processes/server-process.js';

/**
 * Jobs across replicas: with REDIS_URL the items go through one BullMQ queue that every
 * replica works from, on one PostgreSQL database and one data directory. First replicas in
 * this process (a tiny model, to test the sharing itself), then two real server processes
 * with the real model, one of them killed with SIGKILL part-way through a job.
 */

const redisUrl = process.env.REDIS_URL;
const databaseUrl = process.env.DATABASE_URL;
if (!redisUrl || !databaseUrl) console.error('[cutout tests] jobs across replicas SKIPPED: REDIS_URL and DATABASE_URL are both needed (.ci/run sets them)');

let photos: Server;
let base: string;
const fetched = new Map<string, number>();

beforeAll(async () => {
  const png = await makePhoto('png', 40, 30);
  photos = createServer((request, response) => {
    const path = request.url ?? '';
    fetched.set(path, (fetched.get(path) ?? 0) + 1);
    if (path.startsWith('/photo/')) return response.writeHead(200, { 'content-type': 'image/png' }).end(png);
    response.writeHead(404).end('no');
  });
  await new Promise<void>((resolve) => photos.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(photos.address() as AddressInfo).port}`;
});

/** The running test's cleanups, run in reverse order once it ends. */
const cleanups: (() => Promise<unknown>)[] = [];
/**
 * The cleanups of tests that ended, still running: closing a replica waits up to 5 s for the
 * fetch it has blocked on Redis (BullMQ's worker has no way to cut a manual fetch short), so
 * they go on while the next test starts; every test has a schema, queue and data directory of
 * its own. afterAll waits for them all and fails with the first error.
 */
const closing: Promise<unknown>[] = [];
afterEach(() => {
  const mine = cleanups.splice(0).reverse();
  const run = (async () => {
    for (const cleanup of mine) await cleanup();
  })();
  // Seen by afterAll; handled now, so that a cleanup that fails early is not an unhandled rejection.
  run.catch(() => undefined);
  closing.push(run);
});
afterAll(async () => {
  const settled = await Promise.allSettled(closing);
  await killLeftoverChildren();
  photos?.close();
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** A fresh PostgreSQL schema (dropped after the test), a BullMQ queue name of its own, and a shared data directory. */
async function fleetPlace() {
  const schema = `cutout_fleet_${randomBytes(5).toString('hex')}`;
  const queue = `cutout-fleet-test-${randomBytes(5).toString('hex')}`;
  const dataDir = await mkdtemp(join(tmpdir(), 'cutout-fleet-'));
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  cleanups.push(async () => {
    await admin.query(`drop schema if exists ${schema} cascade`);
    await admin.end();
    await new Queue(queue, { connection: { url: redisUrl } }).obliterate({ force: true }).catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
  });
  const url = new URL(databaseUrl!);
  url.searchParams.set('options', `-c search_path=${schema}`);
  await admin.query(`create schema ${schema}`);
  /** The usage the dashboard would show, over every token and day. */
  const usage = async () => {
    const row = await admin.query(`select coalesce(sum(succeeded), 0)::int as succeeded, coalesce(sum(refused), 0)::int as refused, coalesce(sum(failed), 0)::int as failed from ${schema}.usage_daily`);
    return row.rows[0] as { succeeded: number; refused: number; failed: number };
  };
  const items = async (jobId: string) =>
    (await admin.query(`select item_index, state, attempts from ${schema}.job_items where job_id = $1 order by item_index`, [jobId])).rows as { item_index: number; state: string; attempts: number }[];
  return { schema, queue, dataDir, databaseUrl: url.toString(), usage, items, admin, openStore: () => openPostgresStore(databaseUrl!, { schema }) };
}

type Place = Awaited<ReturnType<typeof fleetPlace>>;

/** A replica in this process: its own app, store connection and tiny model, on the place's database, Redis queue and data directory. */
async function replica(place: Place, segmenter: SquareSegmenter = squareSegmenter(), redis = redisUrl): Promise<{ t: TestApp; segmenter: SquareSegmenter }> {
  const t = await startTestApp(
    { urlAllowPrivate: true, rateLimit: 0, redisUrl: redis, jobQueue: place.queue, jobStalledMs: 1000, jobReconcileMs: 1000, dataDir: place.dataDir },
    { model: ModelService.ofSegmenter(segmenter), store: await place.openStore() },
  );
  cleanups.push(() => t.close());
  // The runner starts once the app is ready, as a listening server is.
  await t.app.ready();
  return { t, segmenter };
}

const createJob = (t: TestApp, auth: string, paths: string[]) =>
  t.app.inject({ method: 'POST', url: '/api/v1/jobs', headers: { authorization: auth }, payload: { images: paths.map((path) => ({ image_url: `${base}${path}` })) } });
const getJob = async (t: TestApp, auth: string, id: string) => (await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${id}?per_page=1000`, headers: { authorization: auth } })).json();
const photoPaths = (prefix: string, count: number) => Array.from({ length: count }, (_, index) => `/photo/${prefix}-${index}.png`);

describe.skipIf(!redisUrl || !databaseUrl)('jobs across replicas in one process', () => {
  it('shares one job between two replicas; every item runs once and is counted once', { timeout: 60_000 }, async () => {
    const place = await fleetPlace();
    const a = await replica(place);
    const b = await replica(place);
    expect(a.t.app.jobs.runner).toBeInstanceOf(FleetRunner);
    const auth = await a.t.managedToken();
    const made = await createJob(a.t, auth, photoPaths('shared', 30));
    expect(made.statusCode, made.body).toBe(202);
    const id = made.json().id;
    await until(async () => (await getJob(b.t, auth, id)).status === 'done', 'the job to be done');
    const job = await getJob(a.t, auth, id);
    expect(job.counts).toMatchObject({ total: 30, succeeded: 30 });
    // Both replicas took items: the queue is shared, not owned by the replica that made the job.
    expect(a.segmenter.runs).toBeGreaterThan(0);
    expect(b.segmenter.runs).toBeGreaterThan(0);
    expect(a.segmenter.runs + b.segmenter.runs).toBe(30);
    for (const path of photoPaths('shared', 30)) expect(fetched.get(path)).toBe(1);
    expect((await place.items(id)).map((item) => item.attempts)).toEqual(Array(30).fill(1));
    expect(await place.usage()).toEqual({ succeeded: 30, refused: 0, failed: 0 });
    expect(readdirSync(join(place.dataDir, 'jobs', id)).sort()).toEqual(Array.from({ length: 30 }, (_, index) => `${index}.png`).sort());
    // Nothing is left in the shared queue: every entry ended and was removed, none failed.
    const queue = new Queue(place.queue, { connection: { url: redisUrl } });
    cleanups.push(() => queue.close());
    expect(await queue.getJobCounts('wait', 'prioritized', 'active', 'delayed', 'failed')).toEqual({ wait: 0, prioritized: 0, active: 0, delayed: 0, failed: 0 });
  });

  it("lets another token's small job pass a large one that was made first", { timeout: 60_000 }, async () => {
    const place = await fleetPlace();
    const a = await replica(place);
    const first = await a.t.managedToken();
    // A second user token: the helper's managedToken() is always the first one's.
    const second = (await a.t.tokens.exchange((await a.t.tokens.createUserToken('second')).tokenId)).managedToken;
    a.segmenter.hold(1);
    const large = (await createJob(a.t, first, photoPaths('large', 30))).json().id;
    await until(() => a.segmenter.runs === 2, 'the large job to hold the model');
    const small = (await createJob(a.t, second, photoPaths('small', 3))).json().id;
    a.segmenter.release();
    await until(async () => (await getJob(a.t, second, small)).status === 'done', 'the small job to be done');
    // Tokens take turns: with BullMQ's order of arrival alone, the small job would wait for all 30.
    expect((await getJob(a.t, first, large)).counts.succeeded).toBeLessThanOrEqual(8);
    await until(async () => (await getJob(a.t, first, large)).status === 'done', 'the large job to be done');
  });

  it('gives the items a stopping replica holds to another at once, and counts each once', { timeout: 60_000 }, async () => {
    const place = await fleetPlace();
    const a = await replica(place);
    a.segmenter.hold(0);
    const auth = await a.t.managedToken();
    const id = (await createJob(a.t, auth, photoPaths('stopping', 3))).json().id;
    await until(() => a.segmenter.runs === 1, 'replica a to be running an item');
    const b = await replica(place);
    // Closing is what SIGTERM ends in: the item goes back to the store's queue and to BullMQ's.
    const closing = a.t.app.jobs.runner.close();
    a.segmenter.release();
    await closing;
    await until(async () => (await getJob(b.t, auth, id)).status === 'done', 'replica b to finish the job', 20_000);
    expect((await getJob(b.t, auth, id)).counts).toMatchObject({ succeeded: 3 });
    expect(b.segmenter.runs).toBe(3);
    // The item a held was handed back (that start not counted), started again by b, and counted once.
    expect((await place.items(id)).map((item) => item.attempts).sort()).toEqual([1, 1, 1]);
    expect(await place.usage()).toEqual({ succeeded: 3, refused: 0, failed: 0 });
  });

  it('reconciles: adds the queued items of a job BullMQ never had (made while Redis was away), and fails an item started too often', { timeout: 60_000 }, async () => {
    const place = await fleetPlace();
    const store = await place.openStore();
    cleanups.push(() => store.close());
    const token = (await new TokenService(store, { managedTokenTtl: 60 }).createUserToken('early')).token.id;
    const job = (id: string) => ({ id, userTokenId: token, options: {}, createdAt: new Date().toISOString(), webhookUrl: null, idempotencyKey: null, bodyHash: null });
    const lost = `job_${randomBytes(16).toString('base64url')}`;
    await store.createJob(job(lost), photoPaths('lost', 3).map((path) => ({ imageUrl: `${base}${path}`, clientId: null })));
    // An item five replicas took and none finished (each died holding it), still in BullMQ.
    const doomed = `job_${randomBytes(16).toString('base64url')}`;
    await store.createJob(job(doomed), [{ imageUrl: `${base}/photo/doomed.png`, clientId: null }]);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    for (let start = 0; start < 5; start++) await store.claimJobItemAt(doomed, 0, new Date().toISOString(), future);
    const queue = new Queue(place.queue, { connection: { url: redisUrl } });
    cleanups.push(() => queue.close());
    await queue.add('item', { jobId: doomed, index: 0 }, { jobId: `${doomed}.0` });

    const { t } = await replica(place);
    await until(async () => (await store.findJob(lost, token))?.status === 'done' && (await store.findJob(doomed, token))?.status === 'done', 'both jobs to be done');
    expect(await store.countJobItems(lost)).toMatchObject({ succeeded: 3 });
    expect(await store.findJobItem(doomed, 0)).toMatchObject({ state: 'failed', problemCode: 'too_many_starts', attempts: 5 });
    expect(fetched.get('/photo/doomed.png')).toBeUndefined();
    expect(await place.usage()).toEqual({ succeeded: 3, refused: 0, failed: 1 });
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/^cutout_job_item_recoveries_total\{kind="reconciled_queued"\} 3$/m);
    expect(metrics).toMatch(/^cutout_job_items_total\{state="failed",code="too_many_starts"\} 1$/m);
  });

  it('cancels on one replica an item running on another, and counts nothing for it', { timeout: 60_000 }, async () => {
    const place = await fleetPlace();
    const a = await replica(place);
    const b = await replica(place);
    // Each replica holds the item it takes in its model: neither item can end by itself.
    a.segmenter.hold(0);
    b.segmenter.hold(0);
    const auth = await a.t.managedToken();
    const id = (await createJob(a.t, auth, photoPaths('cancel', 5))).json().id;
    await until(() => a.segmenter.runs === 1 && b.segmenter.runs === 1, 'each replica to be running an item');
    // Three wait in the shared queue, and every replica says so.
    for (const { t } of [a, b]) expect((await t.app.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^cutout_job_items_queued 3$/m);
    const cancelled = await a.t.app.inject({ method: 'DELETE', url: `/api/v1/jobs/${id}`, headers: { authorization: auth } });
    expect(cancelled.json()).toMatchObject({ status: 'cancelled', counts: { cancelled: 5 } });
    // Replica b heard it over Redis and let go of its item, though its model still holds it.
    await until(() => a.t.app.jobs.runner.inFlight === 0 && b.t.app.jobs.runner.inFlight === 0, 'both replicas to stop their items');
    a.segmenter.release();
    b.segmenter.release();
    const queue = new Queue(place.queue, { connection: { url: redisUrl } });
    cleanups.push(() => queue.close());
    await until(async () => (await queue.getJobCounts('wait', 'prioritized', 'active')).active === 0, 'the queue to be empty');
    expect(await queue.getJobCounts('wait', 'prioritized', 'delayed')).toEqual({ wait: 0, prioritized: 0, delayed: 0 });
    expect(await place.usage()).toEqual({ succeeded: 0, refused: 0, failed: 0 });
    expect((await getJob(b.t, auth, id)).counts).toMatchObject({ cancelled: 5, succeeded: 0 });
  });
});

/** A redis-server of the test's own, without persistence, that the test may flush; stopped after the test. */
async function privateRedis(): Promise<{ url: string; client: Redis }> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  // Connecting again every 50 ms until the server listens.
  const client = new Redis(url, { retryStrategy: () => 50 });
  client.on('error', () => undefined);
  cleanups.push(async () => {
    client.disconnect();
    child.kill('SIGKILL');
  });
  await until(() => client.status === 'ready', 'the private redis-server to listen', 10_000);
  return { url, client };
}

describe.skipIf(!redisUrl || !databaseUrl)('a Redis that forgets', () => {
  it('a job finishes after FLUSHDB mid-job: every image once, counted once, no replica restarted', { timeout: 60_000 }, async () => {
    const ITEMS = 30;
    const redis = await privateRedis();
    const place = await fleetPlace();
    const a = await replica(place, squareSegmenter(), redis.url);
    const b = await replica(place, squareSegmenter(), redis.url);
    // Each replica finishes three images, then holds its fourth in its model.
    a.segmenter.hold(3);
    b.segmenter.hold(3);
    const auth = await a.t.managedToken();
    const id = (await createJob(a.t, auth, photoPaths('flushed', ITEMS))).json().id;
    await until(() => a.segmenter.runs === 4 && b.segmenter.runs === 4, 'each replica to hold its fourth image');
    expect(await redis.client.dbsize()).toBeGreaterThan(0);
    await redis.client.flushdb();
    a.segmenter.release();
    b.segmenter.release();
    await until(async () => (await getJob(a.t, auth, id)).status === 'done', 'the job to be done after the flush', 30_000);
    expect((await getJob(b.t, auth, id)).counts).toMatchObject({ total: ITEMS, succeeded: ITEMS, failed: 0 });
    for (const path of photoPaths('flushed', ITEMS)) expect(fetched.get(path)).toBe(1);
    expect(a.segmenter.runs + b.segmenter.runs).toBe(ITEMS);
    expect(await place.usage()).toEqual({ succeeded: ITEMS, refused: 0, failed: 0 });
    expect((await place.items(id)).every((item) => item.attempts === 1)).toBe(true);
    const recovered = (await Promise.all([a, b].map(async ({ t }) => (await t.app.inject({ method: 'GET', url: '/metrics' })).body)))
      .flatMap((text) => [...text.matchAll(/^cutout_job_item_recoveries_total\{kind="reconciled_queued"\} (\d+)$/gm)].map((match) => Number(match[1])));
    expect(recovered.reduce((sum, count) => sum + count, 0)).toBe(ITEMS - 8);
  });

  it('runs each scheduled upkeep on one replica at a time, and declares its schedulers again after a flush', { timeout: 30_000 }, async () => {
    const redis = await privateRedis();
    const log = pino({ level: 'silent' });
    const queue = `cutout-upkeep-test-${randomBytes(5).toString('hex')}`;
    let reconciles = 0;
    const runner = { reconcile: async () => ({ queued: reconciles++, running: 0 }) };
    const sweeper = { sweep: async () => 0 };
    const config = { jobQueue: queue, jobRetention: 3600, jobReconcileMs: 500, redisUrl: redis.url };
    const upkeeps = [new FleetUpkeep({ config, runner, sweeper, log }), new FleetUpkeep({ config, runner, sweeper, log })];
    cleanups.push(() => Promise.all(upkeeps.map((upkeep) => upkeep.close())));
    await Promise.all(upkeeps.map((upkeep) => upkeep.start()));
    await sleep(3000);
    // One run a period across both replicas (and the first at once), never one each.
    expect(reconciles).toBeGreaterThanOrEqual(4);
    expect(reconciles).toBeLessThanOrEqual(8);
    await redis.client.flushdb();
    const after = reconciles;
    await until(() => reconciles >= after + 2, 'reconciliation to run again after the flush', 10_000);
  });
});

describe.skipIf(!redisUrl || !databaseUrl)('jobs across two server processes', () => {
  it('finishes a job after SIGKILL takes one replica mid-item: every item once, counted once, its result there once', { timeout: 300_000 }, async () => {
    const ITEMS = 8;
    const place = await fleetPlace();
    // The schema migrated and a token made before the replicas start, as an operator would.
    const store: Store = await place.openStore();
    const { tokenId } = await new TokenService(store, { managedTokenTtl: 3600 }).createUserToken('fleet');
    await store.close();
    const env = {
      DATABASE_URL: place.databaseUrl,
      REDIS_URL: redisUrl!,
      CUTOUT_JOB_QUEUE: place.queue,
      CUTOUT_JOB_STALLED_MS: '2000',
      CUTOUT_DATA_DIR: place.dataDir,
      CUTOUT_URL_ALLOW_PRIVATE: 'true',
      CUTOUT_RATE_LIMIT: '0',
    };
    const servers: ServerProcess[] = await Promise.all([startServer(env), startServer(env)]);
    cleanups.push(() => Promise.all(servers.map((server) => server.stop(1000))));
    const [doomed, survivor] = servers as [ServerProcess, ServerProcess];
    const auth = await exchangeOverHttp(doomed.origin, tokenId);
    const made = await send(doomed.origin, 'POST', '/api/v1/jobs', {
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({ images: photoPaths('killed', ITEMS).map((path) => ({ image_url: `${base}${path}` })) }),
    });
    expect(made.status, made.body.toString()).toBe(202);
    const id = (JSON.parse(made.body.toString()) as { id: string }).id;

    // Kill when both replicas hold an item (each works on one at a time): one of the two is the doomed one's.
    await until(async () => {
      const items = await place.items(id);
      return items.filter((item) => item.state === 'running').length === 2 && items.some((item) => item.state === 'succeeded');
    }, 'both replicas to be working on the job', 120_000);
    doomed.child.kill('SIGKILL');
    expect((await doomed.exited).signal).toBe('SIGKILL');
    const killedAt = (await place.items(id)).filter((item) => item.state === 'succeeded').length;
    expect(killedAt).toBeLessThan(ITEMS);

    const started = Date.now();
    let job: { status: string; counts: Record<string, number> } | undefined;
    await until(async () => {
      const answer = await send(survivor.origin, 'GET', `/api/v1/jobs/${id}`, { headers: { authorization: auth } });
      job = JSON.parse(answer.body.toString());
      return job!.status !== 'queued' && job!.status !== 'running';
    }, 'the survivor to finish the job', 180_000);
    expect(job).toMatchObject({ status: 'done', counts: { total: ITEMS, succeeded: ITEMS, failed: 0, cancelled: 0 } });
    const items = await place.items(id);
    // The item the doomed replica held was taken over by the survivor with a second attempt.
    const redone = items.filter((item) => item.attempts > 1);
    expect(redone.length).toBeGreaterThanOrEqual(1);
    expect(items.every((item) => item.state === 'succeeded' && item.attempts <= 2)).toBe(true);
    // Counted once per item, however often it was started.
    expect(await place.usage()).toEqual({ succeeded: ITEMS, refused: 0, failed: 0 });
    const files = readdirSync(join(place.dataDir, 'jobs', id));
    const results = files.filter((file) => !file.endsWith('.partial'));
    expect(results.sort()).toEqual(Array.from({ length: ITEMS }, (_, index) => `${index}.png`).sort());
    console.log(`[jobs across replicas] ${killedAt} of ${ITEMS} done at the kill, the rest in ${Date.now() - started} ms by the survivor; ${redone.length} redone; ${files.length - results.length} partial file(s) left by the kill`);
  });
});
