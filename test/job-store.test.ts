import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_ITEM_STARTS, type NewJob } from '../src/store/job-records.js';
import type { Store } from '../src/store/store.js';
import { freshStoreEach, storeEngines } from './helpers/stores.js';

/** The jobs' queries, on SQLite and (with DATABASE_URL) PostgreSQL: the same answers from both. */

const T0 = '2030-01-01T00:00:00.000Z';
const at = (seconds: number) => new Date(Date.parse(T0) + seconds * 1000).toISOString();

async function userToken(store: Store, accountId: string | null = null): Promise<string> {
  const id = randomUUID();
  await store.createUserToken({ id, name: id, tokenHash: randomBytes(32).toString('hex'), prefix: 'cut_user_x', createdAt: T0, expiresAt: null, accountId });
  return id;
}

const newJob = (userTokenId: string, fields: Partial<NewJob> = {}): NewJob => ({
  id: `job_${randomBytes(16).toString('base64url')}`,
  userTokenId,
  options: { format: 'webp', crop: true },
  createdAt: T0,
  webhookUrl: null,
  idempotencyKey: null,
  bodyHash: null,
  ...fields,
});
/** The embedded runner's claim at `when`: the item, or undefined when there is none; anything else fails the test. */
async function claimNext(store: Store, jobId: string, when = T0) {
  const claim = await store.claimJobItem(jobId, when);
  if (claim && claim.kind !== 'claimed') throw new Error(`a claim found ${JSON.stringify(claim)}`);
  return claim?.item;
}

/** The fleet's claim of one item at `when`, taking it over from a holder whose heartbeat is before `staleBefore`. */
async function claimAt(store: Store, jobId: string, index: number, when = T0, staleBefore = at(3600)) {
  const claim = await store.claimJobItemAt(jobId, index, when, staleBefore);
  if (claim && claim.kind !== 'claimed') throw new Error(`a claim found ${JSON.stringify(claim)}`);
  return claim?.item;
}

const urls = (n: number) => Array.from({ length: n }, (_, index) => ({ imageUrl: `https://example.com/${index}.jpg`, clientId: index % 2 ? `sku-${index}` : null }));

for (const engine of storeEngines()) {
  describe.skipIf(engine.skip)(`${engine.name} job store`, () => {
    const fresh = freshStoreEach(engine);

    it('keeps a job and its items, in order, in several inserts when the list is long', async () => {
      const token = await userToken(fresh.store);
      const job = newJob(token, { webhookUrl: 'https://example.com/hook' });
      await fresh.store.createJob(job, urls(2500));
      expect(await fresh.store.findJob(job.id, token)).toEqual({
        id: job.id,
        accountId: null,
        userTokenId: token,
        options: { format: 'webp', crop: true },
        status: 'queued',
        createdAt: T0,
        finishedAt: null,
        webhookUrl: 'https://example.com/hook',
        itemCount: 2500,
        bodyHash: null,
      });
      expect(await fresh.store.countJobItems(job.id)).toEqual({ queued: 2500, running: 0, succeeded: 0, failed: 0, cancelled: 0 });
      const page = await fresh.store.listJobItems(job.id, 1000, 2);
      expect(page).toEqual([
        { index: 1000, clientId: null, imageUrl: 'https://example.com/1000.jpg', inputPath: null, state: 'queued', problemCode: null, problemDetail: null, resultPath: null, contentType: null, attempts: 0 },
        { index: 1001, clientId: 'sku-1001', imageUrl: 'https://example.com/1001.jpg', inputPath: null, state: 'queued', problemCode: null, problemDetail: null, resultPath: null, contentType: null, attempts: 0 },
      ]);
      expect(await fresh.store.openJobLoad(token)).toEqual({ openJobs: 1, queuedItems: 2500 });
    });

    it('finds a job for its account\'s tokens only; a token without an account sees only its own', async () => {
      const loner = await userToken(fresh.store);
      const account = await fresh.store.createAccount({ id: randomUUID(), email: 'a@example.com', passwordHash: 'x', createdAt: T0 });
      const other = await fresh.store.createAccount({ id: randomUUID(), email: 'b@example.com', passwordHash: 'x', createdAt: T0 });
      // The first account adopted the token made before it.
      const colleague = await userToken(fresh.store, account.id);
      const stranger = await userToken(fresh.store, other.id);
      const job = newJob(loner);
      await fresh.store.createJob(job, urls(1));
      expect((await fresh.store.findJob(job.id, loner))?.accountId).toBe(account.id);
      expect(await fresh.store.findJob(job.id, colleague)).toBeDefined();
      expect(await fresh.store.findJob(job.id, stranger)).toBeUndefined();
      expect(await fresh.store.findJob('job_nothing', loner)).toBeUndefined();
    });

    it('hands each item to one claim, counts it once with the claim that ends it, and marks the job done after the last', async () => {
      const token = await userToken(fresh.store);
      const account = await fresh.store.createAccount({ id: randomUUID(), email: 'c@example.com', passwordHash: 'x', createdAt: T0 });
      const job = newJob(token);
      await fresh.store.createJob(job, urls(2));
      const first = await claimNext(fresh.store, job.id);
      const second = await claimNext(fresh.store, job.id);
      expect([first?.index, second?.index, first?.attempt, first?.options]).toEqual([0, 1, 1, { format: 'webp', crop: true }]);
      expect(await claimNext(fresh.store, job.id)).toBeUndefined();
      expect((await fresh.store.findJob(job.id, token))?.status).toBe('running');

      const success = { state: 'succeeded', resultPath: `jobs/${job.id}/0.webp`, contentType: 'image/webp', megapixels: 2 } as const;
      expect(await fresh.store.finishJobItem(first!, success, at(10))).toBe(true);
      expect(await fresh.store.finishJobItem(first!, success, at(11))).toBe(false);
      expect((await fresh.store.findJob(job.id, token))?.status).toBe('running');
      const failure = { state: 'failed', problemCode: 'image_decode_failed', problemDetail: 'corrupt', status: 422 } as const;
      expect(await fresh.store.finishJobItem(second!, failure, at(20))).toBe(true);

      expect(await fresh.store.findJob(job.id, token)).toMatchObject({ status: 'done', finishedAt: at(20) });
      expect(await fresh.store.findJobItem(job.id, 1)).toMatchObject({ state: 'failed', problemCode: 'image_decode_failed', problemDetail: 'corrupt', attempts: 1 });
      expect(await fresh.store.listDailyUsage(account.id, '2030-01-01')).toEqual([{ userTokenId: token, day: '2030-01-01', succeeded: 1, refused: 1, failed: 0, megapixels: 2 }]);
      expect(await fresh.store.listJobsFinishedBefore(at(20))).toEqual([]);
      expect(await fresh.store.listJobsFinishedBefore(at(21))).toEqual([job.id]);
      await fresh.store.deleteJob(job.id);
      expect(await fresh.store.findJob(job.id, token)).toBeUndefined();
      expect(await fresh.store.listJobItems(job.id, 0, 10)).toEqual([]);
    });

    it('after a restart, queues running items again; the old claim can no longer end them', async () => {
      const token = await userToken(fresh.store);
      const job = newJob(token);
      await fresh.store.createJob(job, urls(1));
      const old = (await claimNext(fresh.store, job.id))!;
      expect(await fresh.store.requeueRunningJobItems()).toBe(1);
      const renewed = (await claimNext(fresh.store, job.id))!;
      expect(renewed.attempt).toBe(2);
      const success = { state: 'succeeded', resultPath: 'x', contentType: 'image/png', megapixels: 1 } as const;
      expect(await fresh.store.finishJobItem(old, success, at(1))).toBe(false);
      await fresh.store.returnJobItem(old);
      expect((await fresh.store.findJobItem(job.id, 0))?.state).toBe('running');
      await fresh.store.returnJobItem(renewed);
      // Handed back: that start is not counted, the one its server died in is.
      expect(await fresh.store.findJobItem(job.id, 0)).toMatchObject({ state: 'queued', attempts: 1 });
    });

    it('never counts a hand-back as a start, however often an item is handed back', async () => {
      const token = await userToken(fresh.store);
      const job = newJob(token);
      await fresh.store.createJob(job, urls(1));
      for (let round = 0; round < 8; round++) await fresh.store.returnJobItem((await claimNext(fresh.store, job.id))!);
      expect(await fresh.store.findJobItem(job.id, 0)).toMatchObject({ state: 'queued', attempts: 0 });
      expect((await claimNext(fresh.store, job.id))?.attempt).toBe(1);
    });

    it(`fails an item whose server died at each of its ${MAX_ITEM_STARTS} starts, alone: its job goes on, the failure counted once`, async () => {
      const token = await userToken(fresh.store);
      const account = await fresh.store.createAccount({ id: randomUUID(), email: 'poison@example.com', passwordHash: 'x', createdAt: T0 });
      const job = newJob(token);
      await fresh.store.createJob(job, urls(2));
      for (let start = 1; start <= MAX_ITEM_STARTS; start++) {
        expect(await claimNext(fresh.store, job.id)).toMatchObject({ index: 0, attempt: start });
        // The server died with it: the next start queues it again, this start counted.
        expect(await fresh.store.requeueRunningJobItems()).toBe(1);
      }
      expect(await fresh.store.claimJobItem(job.id, at(5))).toEqual({ kind: 'gave_up', jobId: job.id, index: 0, starts: MAX_ITEM_STARTS });
      expect(await fresh.store.findJobItem(job.id, 0)).toMatchObject({ state: 'failed', problemCode: 'too_many_starts', attempts: MAX_ITEM_STARTS });
      expect((await fresh.store.findJobItem(job.id, 0))?.problemDetail).toMatch(/started 5 times/);
      const next = (await claimNext(fresh.store, job.id))!;
      expect(next.index).toBe(1);
      await fresh.store.finishJobItem(next, { state: 'succeeded', resultPath: 'x', contentType: 'image/png', megapixels: 1 }, at(6));
      expect(await fresh.store.findJob(job.id, token)).toMatchObject({ status: 'done' });
      expect(await fresh.store.listDailyUsage(account.id, '2030-01-01')).toEqual([{ userTokenId: token, day: '2030-01-01', succeeded: 1, refused: 0, failed: 1, megapixels: 1 }]);
    });

    it("the fleet's claim leaves an item to a holder that still heartbeats, and takes it over once the heartbeats stop", async () => {
      const token = await userToken(fresh.store);
      const job = newJob(token);
      await fresh.store.createJob(job, urls(2));
      const first = (await claimAt(fresh.store, job.id, 0, at(10)))!;
      expect(await fresh.store.claimJobItemAt(job.id, 0, at(12), at(5))).toEqual({ kind: 'held', heartbeatAt: at(10) });
      expect(await fresh.store.touchJobItem(first, at(20))).toBe(true);
      expect(await fresh.store.listStaleJobItems(at(15))).toEqual([]);
      expect(await fresh.store.listStaleJobItems(at(25))).toEqual([{ jobId: job.id, userTokenId: token, index: 0 }]);
      const second = (await claimAt(fresh.store, job.id, 0, at(30), at(25)))!;
      expect(second.attempt).toBe(2);
      // The first holder hears at its next heartbeat that the item is no longer its own.
      expect(await fresh.store.touchJobItem(first, at(31))).toBe(false);
      expect(await fresh.store.listStaleJobItems(at(25))).toEqual([]);
      for (let start = 3; start <= MAX_ITEM_STARTS; start++) await claimAt(fresh.store, job.id, 0, at(40), at(3600));
      expect(await fresh.store.claimJobItemAt(job.id, 0, at(50), at(3600))).toEqual({ kind: 'gave_up', jobId: job.id, index: 0, starts: MAX_ITEM_STARTS });
    });

    it('checks the caps in the transaction that makes the job: of submissions at once, no more pass than the caps allow', async () => {
      const token = await userToken(fresh.store);
      const submissions = Array.from({ length: 8 }, () => fresh.store.createJob(newJob(token), urls(1), { maxOpenJobs: 3, maxQueuedItems: 100 }));
      const made = await Promise.all(submissions);
      expect(made.filter((creation) => creation.made)).toHaveLength(3);
      expect(made.find((creation) => !creation.made)).toEqual({ made: false, openJobs: 3, queuedItems: 3 });
      expect(await fresh.store.openJobLoad(token)).toEqual({ openJobs: 3, queuedItems: 3 });
      const other = await userToken(fresh.store);
      const large = await Promise.all([0, 1, 2].map(() => fresh.store.createJob(newJob(other), urls(4), { maxOpenJobs: 10, maxQueuedItems: 10 })));
      expect(large.filter((creation) => creation.made)).toHaveLength(2);
      expect(await fresh.store.openJobLoad(other)).toEqual({ openJobs: 2, queuedItems: 8 });
    });

    it('claims a given item from queued or from a lost claim, once per attempt, and never a finished or cancelled one', async () => {
      const token = await userToken(fresh.store);
      const job = newJob(token);
      await fresh.store.createJob(job, urls(3));
      expect(await fresh.store.listQueuedJobItems(job.id, -1, 10)).toEqual([0, 1, 2]);
      expect(await fresh.store.countQueuedJobItems()).toBe(3);
      const first = (await claimAt(fresh.store, job.id, 1))!;
      expect(first).toMatchObject({ jobId: job.id, index: 1, imageUrl: 'https://example.com/1.jpg', userTokenId: token, options: { format: 'webp', crop: true }, attempt: 1 });
      expect((await fresh.store.findJob(job.id, token))?.status).toBe('running');
      expect(await fresh.store.listQueuedJobItems(job.id, 0, 10)).toEqual([2]);
      expect(await fresh.store.countQueuedJobItems()).toBe(2);
      // Another replica takes it over (the first one's lock was lost): only the new claim may end it.
      const second = (await claimAt(fresh.store, job.id, 1))!;
      expect(second.attempt).toBe(2);
      const success = { state: 'succeeded', resultPath: 'x', contentType: 'image/png', megapixels: 1 } as const;
      expect(await fresh.store.finishJobItem(first, success, at(1))).toBe(false);
      expect(await fresh.store.finishJobItem(second, success, at(1))).toBe(true);
      expect(await claimAt(fresh.store, job.id, 1)).toBeUndefined();
      expect(await claimAt(fresh.store, job.id, 7)).toBeUndefined();
      expect(await fresh.store.cancelJob(job.id, at(2))).toBe(true);
      expect(await claimAt(fresh.store, job.id, 2)).toBeUndefined();
      expect(await fresh.store.countQueuedJobItems()).toBe(0);
      expect((await fresh.store.findJobItem(job.id, 1))?.attempts).toBe(2);
    });

    it('cancels the waiting and running items of an unfinished job only, and keeps the finished ones', async () => {
      const token = await userToken(fresh.store);
      const job = newJob(token);
      await fresh.store.createJob(job, urls(3));
      const done = (await claimNext(fresh.store, job.id))!;
      await fresh.store.finishJobItem(done, { state: 'succeeded', resultPath: 'x', contentType: 'image/png', megapixels: 1 }, at(1));
      const running = (await claimNext(fresh.store, job.id))!;
      expect(await fresh.store.cancelJob(job.id, at(2))).toBe(true);
      expect(await fresh.store.cancelJob(job.id, at(3))).toBe(false);
      expect(await fresh.store.countJobItems(job.id)).toEqual({ queued: 0, running: 0, succeeded: 1, failed: 0, cancelled: 2 });
      expect(await fresh.store.finishJobItem(running, { state: 'succeeded', resultPath: 'y', contentType: 'image/png', megapixels: 1 }, at(4))).toBe(false);
      expect(await claimNext(fresh.store, job.id)).toBeUndefined();
      expect(await fresh.store.findJob(job.id, token)).toMatchObject({ status: 'cancelled', finishedAt: at(2) });
      expect(await fresh.store.openJobLoad(token)).toEqual({ openJobs: 0, queuedItems: 0 });
      expect(await fresh.store.listOpenJobs()).toEqual([]);
    });

    it('keeps an idempotency key to one job of a token until it is released', async () => {
      const token = await userToken(fresh.store);
      const first = newJob(token, { idempotencyKey: 'k', bodyHash: 'h1' });
      await fresh.store.createJob(first, urls(1));
      await expect(fresh.store.createJob(newJob(token, { idempotencyKey: 'k' }), urls(1))).rejects.toThrow();
      // Another token may use the same key.
      await fresh.store.createJob(newJob(await userToken(fresh.store), { idempotencyKey: 'k' }), urls(1));
      expect((await fresh.store.findJobByIdempotencyKey(token, 'k'))?.id).toBe(first.id);
      await fresh.store.releaseIdempotencyKey(first.id);
      expect(await fresh.store.findJobByIdempotencyKey(token, 'k')).toBeUndefined();
      const second = newJob(token, { idempotencyKey: 'k' });
      await fresh.store.createJob(second, urls(1));
      expect((await fresh.store.findJobByIdempotencyKey(token, 'k'))?.id).toBe(second.id);
      expect((await fresh.store.listOpenJobs()).filter((job) => job.userTokenId === token).map((job) => job.id).sort()).toEqual([first.id, second.id].sort());
    });

    it("lists an account's jobs newest first, its tokens' own jobs from before it included, and no other account's", async () => {
      // Made before any account: its job has no account until the first one adopts the token.
      const early = await userToken(fresh.store);
      const before = newJob(early, { createdAt: at(1) });
      await fresh.store.createJob(before, urls(1));
      const account = await fresh.store.createAccount({ id: randomUUID(), email: 'd@example.com', passwordHash: 'x', createdAt: T0 });
      const other = await fresh.store.createAccount({ id: randomUUID(), email: 'e@example.com', passwordHash: 'x', createdAt: T0 });
      const mine = await userToken(fresh.store, account.id);
      const theirs = await userToken(fresh.store, other.id);
      const jobs = [newJob(mine, { createdAt: at(3) }), newJob(early, { createdAt: at(2) }), newJob(mine, { createdAt: at(4) })];
      for (const job of jobs) await fresh.store.createJob(job, urls(2));
      const stranger = newJob(theirs, { createdAt: at(5) });
      await fresh.store.createJob(stranger, urls(1));

      expect((await fresh.store.findJob(before.id, early))?.accountId).toBeNull();
      const listed = await fresh.store.listJobsOfAccount(account.id, 10);
      expect(listed.map((job) => job.id)).toEqual([jobs[2].id, jobs[0].id, jobs[1].id, before.id]);
      expect(listed[0]).toMatchObject({ userTokenId: mine, accountId: account.id, itemCount: 2, status: 'queued', createdAt: at(4) });
      expect((await fresh.store.listJobsOfAccount(account.id, 2)).map((job) => job.id)).toEqual([jobs[2].id, jobs[0].id]);
      expect((await fresh.store.listJobsOfAccount(other.id, 10)).map((job) => job.id)).toEqual([stranger.id]);

      expect((await fresh.store.findJobOfAccount(before.id, account.id))?.id).toBe(before.id);
      expect((await fresh.store.findJobOfAccount(jobs[0].id, account.id))?.id).toBe(jobs[0].id);
      expect(await fresh.store.findJobOfAccount(stranger.id, account.id)).toBeUndefined();
      expect(await fresh.store.findJobOfAccount(jobs[0].id, other.id)).toBeUndefined();
    });
  });
}
