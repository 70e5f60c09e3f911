import type { ExpressionBuilder, Kysely, Selectable, Transaction } from 'kysely';
import type { Database } from './database.js';
import { ERRORS } from '../errors.js';
import { MAX_ITEM_STARTS, type ClaimedJobItem, type JobCounts, type JobItemClaim, type JobItemRecord, type JobStore } from './job-records.js';
import { toJob } from './job-row.js';
import { upsertUsage } from './usage-upsert.js';
import { queueWebhook } from './webhook-queries.js';

/** Rows per insert: PostgreSQL takes at most 65535 parameters in one statement. */
const INSERT_CHUNK = 1000;

const OPEN = ['queued', 'running'] as const;

const toItem = (row: Selectable<Database['job_items']>): JobItemRecord => ({
  index: Number(row.item_index),
  clientId: row.client_id,
  imageUrl: row.image_url,
  inputPath: row.input_path,
  state: row.state,
  problemCode: row.problem_code,
  problemDetail: row.problem_detail,
  resultPath: row.result_path,
  contentType: row.content_type,
  attempts: Number(row.attempts),
});

/**
 * A job is the account's when the account is the job's (its token's account when it was
 * made), or when the token that made it is the account's now: a token made before any
 * account, adopted by the first one, brings its jobs along.
 */
const ofAccount = (accountId: string) => (eb: ExpressionBuilder<Database, 'jobs'>) =>
  eb.or([eb('account_id', '=', accountId), eb('user_token_id', 'in', eb.selectFrom('user_tokens').select('id').where('account_id', '=', accountId))]);

/**
 * A job is seen with a token when the token made it, or when it is the job's account's
 * (SQL's `=` is never true against NULL: a job without an account is only its token's).
 */
const ofToken = (userTokenId: string) => (eb: ExpressionBuilder<Database, 'jobs'>) =>
  eb.or([eb('user_token_id', '=', userTokenId), eb('account_id', '=', eb.selectFrom('user_tokens').select('account_id').where('id', '=', userTokenId))]);

/** Marks the job done when none of its items is queued or running any more, and queues its webhook. */
async function settleJob(trx: Transaction<Database>, jobId: string, at: string): Promise<void> {
  await trx
    .updateTable('jobs')
    .set({ status: 'done', finished_at: at })
    .where('id', '=', jobId)
    .where('status', 'in', OPEN)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('job_items').select('item_index').where('job_id', '=', jobId).where('state', 'in', OPEN))))
    .execute();
  await queueWebhook(trx, jobId, at);
}

/** A token's unfinished jobs and the images waiting in them. */
async function openJobLoadOf(db: Kysely<Database> | Transaction<Database>, userTokenId: string) {
  const jobs = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('user_token_id', '=', userTokenId)
    .where('status', 'in', OPEN)
    .executeTakeFirstOrThrow();
  const items = await db
    .selectFrom('job_items as i')
    .innerJoin('jobs as j', 'j.id', 'i.job_id')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('j.user_token_id', '=', userTokenId)
    .where('j.status', 'in', OPEN)
    .where('i.state', '=', 'queued')
    .executeTakeFirstOrThrow();
  return { openJobs: Number(jobs.count), queuedItems: Number(items.count) };
}

/**
 * Fails an item that was started {@link MAX_ITEM_STARTS} times already, instead of starting it
 * again: counted in the token's usage as a failed removal, and its job settled if it was the last.
 */
async function giveUp(trx: Transaction<Database>, jobId: string, index: number, starts: number, userTokenId: string, at: string): Promise<JobItemClaim> {
  const detail = `The image was started ${starts} times and the server working on it stopped each time before it finished (a crash or an out-of-memory kill); it is not tried again.`;
  await trx
    .updateTable('job_items')
    .set({ state: 'failed', problem_code: 'too_many_starts', problem_detail: detail, finished_at: at })
    .where('job_id', '=', jobId)
    .where('item_index', '=', index)
    .where('attempts', '=', starts)
    .execute();
  await upsertUsage(trx, userTokenId, at.slice(0, 10), ERRORS.too_many_starts.status < 500 ? 'refused' : 'failed', 0);
  await settleJob(trx, jobId, at);
  return { kind: 'gave_up', jobId, index, starts };
}

/**
 * Starts the item a claim chose, with one start more, conditional on the state (`from`) and
 * the starts it read: of two claims at once (two runners, two replicas), one wins.
 */
async function startItem(
  trx: Transaction<Database>,
  job: { user_token_id: string; options: string },
  jobId: string,
  index: number,
  item: { image_url: string | null; input_path: string | null; attempts: number },
  from: readonly ('queued' | 'running')[],
  at: string,
): Promise<JobItemClaim | undefined> {
  const attempt = Number(item.attempts) + 1;
  const taken = await trx
    .updateTable('job_items')
    .set({ state: 'running', attempts: attempt, heartbeat_at: at })
    .where('job_id', '=', jobId)
    .where('item_index', '=', index)
    .where('state', 'in', from)
    .where('attempts', '=', attempt - 1)
    .executeTakeFirst();
  if (Number(taken.numUpdatedRows) === 0) return undefined;
  await trx.updateTable('jobs').set({ status: 'running' }).where('id', '=', jobId).where('status', '=', 'queued').execute();
  const options = JSON.parse(job.options) as Record<string, unknown>;
  return { kind: 'claimed', item: { jobId, index, imageUrl: item.image_url, inputPath: item.input_path, userTokenId: job.user_token_id, options, attempt } };
}

/**
 * The {@link JobStore} over any Kysely dialect, part of `createKyselyStore`. Every change of
 * an item's state is a conditional update on the state it expects, so two runners (or a
 * runner and a cancellation) never both win.
 */
export function createJobQueries(db: Kysely<Database>): JobStore {
  /** Which jobs a caller may see: a token's (`ofToken`) or an account's (`ofAccount`). */
  type Seen = ReturnType<typeof ofToken>;
  /** The job `jobId` if `seen` lets it be seen. */
  const findSeen = async (jobId: string, seen: Seen) => {
    const row = await db.selectFrom('jobs').selectAll().where('id', '=', jobId).where(seen).executeTakeFirst();
    return row && toJob(row);
  };
  /** The jobs `seen` lets be seen, newest first. */
  const listSeen = async (seen: Seen, limit: number) =>
    (await db.selectFrom('jobs').selectAll().where(seen).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute()).map(toJob);

  return {
    async createJob(job, items, caps) {
      return db.transaction().execute(async (trx) => {
        if (caps) {
          // A write first, to the token's own row, so that the caps are read under a lock:
          // PostgreSQL holds the row until this transaction ends, SQLite its write lock. Two
          // submissions of one token are made one after the other, never both past a cap.
          await trx.updateTable('user_tokens').set((eb) => ({ id: eb.ref('id') })).where('id', '=', job.userTokenId).execute();
          const load = await openJobLoadOf(trx, job.userTokenId);
          if (load.openJobs >= caps.maxOpenJobs || load.queuedItems + items.length > caps.maxQueuedItems) return { made: false as const, ...load };
        }
        const owner = await trx.selectFrom('user_tokens').select('account_id').where('id', '=', job.userTokenId).executeTakeFirstOrThrow();
        await trx
          .insertInto('jobs')
          .values({
            id: job.id,
            account_id: owner.account_id,
            user_token_id: job.userTokenId,
            options: JSON.stringify(job.options),
            status: 'queued',
            created_at: job.createdAt,
            finished_at: null,
            webhook_url: job.webhookUrl,
            idempotency_key: job.idempotencyKey,
            body_hash: job.bodyHash,
            item_count: items.length,
          })
          .execute();
        for (let start = 0; start < items.length; start += INSERT_CHUNK) {
          const rows = items.slice(start, start + INSERT_CHUNK).map((item, offset) => ({
            job_id: job.id,
            item_index: start + offset,
            client_id: item.clientId,
            image_url: item.imageUrl,
            input_path: item.inputPath ?? null,
            state: 'queued' as const,
            attempts: 0,
          }));
          await trx.insertInto('job_items').values(rows).execute();
        }
        return { made: true as const };
      });
    },

    async findJobByIdempotencyKey(userTokenId, key) {
      const row = await db.selectFrom('jobs').selectAll().where('user_token_id', '=', userTokenId).where('idempotency_key', '=', key).executeTakeFirst();
      return row && toJob(row);
    },

    async releaseIdempotencyKey(jobId) {
      await db.updateTable('jobs').set({ idempotency_key: null }).where('id', '=', jobId).execute();
    },

    findJob: (jobId, userTokenId) => findSeen(jobId, ofToken(userTokenId)),
    listJobs: (userTokenId, limit) => listSeen(ofToken(userTokenId), limit),
    findJobOfAccount: (jobId, accountId) => findSeen(jobId, ofAccount(accountId)),
    listJobsOfAccount: (accountId, limit) => listSeen(ofAccount(accountId), limit),

    async countJobItems(jobId) {
      const rows = await db
        .selectFrom('job_items')
        .select((eb) => ['state', eb.fn.countAll<number | string>().as('count')])
        .where('job_id', '=', jobId)
        .groupBy('state')
        .execute();
      const counts: JobCounts = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };
      for (const row of rows) counts[row.state] = Number(row.count);
      return counts;
    },

    async countJobItemsEndedSince(jobId, since) {
      const row = await db
        .selectFrom('job_items')
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('job_id', '=', jobId)
        .where('state', 'in', ['succeeded', 'failed'])
        .where('finished_at', '>=', since)
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },

    async listJobItems(jobId, offset, limit) {
      const rows = await db.selectFrom('job_items').selectAll().where('job_id', '=', jobId).orderBy('item_index').offset(offset).limit(limit).execute();
      return rows.map(toItem);
    },

    async findJobItem(jobId, index) {
      const row = await db.selectFrom('job_items').selectAll().where('job_id', '=', jobId).where('item_index', '=', index).executeTakeFirst();
      return row && toItem(row);
    },

    openJobLoad: (userTokenId) => openJobLoadOf(db, userTokenId),

    async cancelJob(jobId, at) {
      return db.transaction().execute(async (trx) => {
        const cancelled = await trx.updateTable('jobs').set({ status: 'cancelled', finished_at: at }).where('id', '=', jobId).where('status', 'in', OPEN).executeTakeFirst();
        if (Number(cancelled.numUpdatedRows) === 0) return false;
        await trx.updateTable('job_items').set({ state: 'cancelled', finished_at: at }).where('job_id', '=', jobId).where('state', 'in', OPEN).execute();
        await queueWebhook(trx, jobId, at);
        return true;
      });
    },

    async listOpenJobs() {
      const rows = await db.selectFrom('jobs').select(['id', 'user_token_id']).where('status', 'in', OPEN).orderBy('created_at').orderBy('id').execute();
      return rows.map((row) => ({ id: row.id, userTokenId: row.user_token_id }));
    },

    async claimJobItem(jobId, at) {
      return db.transaction().execute(async (trx): Promise<JobItemClaim | undefined> => {
        const job = await trx.selectFrom('jobs').select(['user_token_id', 'options']).where('id', '=', jobId).where('status', 'in', OPEN).executeTakeFirst();
        if (!job) return undefined;
        const item = await trx
          .selectFrom('job_items')
          .select(['item_index', 'image_url', 'input_path', 'attempts'])
          .where('job_id', '=', jobId)
          .where('state', '=', 'queued')
          .orderBy('item_index')
          .limit(1)
          .executeTakeFirst();
        if (!item) return undefined;
        const index = Number(item.item_index);
        if (Number(item.attempts) >= MAX_ITEM_STARTS) return giveUp(trx, jobId, index, Number(item.attempts), job.user_token_id, at);
        return startItem(trx, job, jobId, index, item, ['queued'], at);
      });
    },

    async claimJobItemAt(jobId, index, at, staleBefore) {
      return db.transaction().execute(async (trx): Promise<JobItemClaim | undefined> => {
        const job = await trx.selectFrom('jobs').select(['user_token_id', 'options']).where('id', '=', jobId).where('status', 'in', OPEN).executeTakeFirst();
        if (!job) return undefined;
        const item = await trx
          .selectFrom('job_items')
          .select(['image_url', 'input_path', 'attempts', 'state', 'heartbeat_at'])
          .where('job_id', '=', jobId)
          .where('item_index', '=', index)
          .where('state', 'in', OPEN)
          .executeTakeFirst();
        if (!item) return undefined;
        // Its holder still works on it (BullMQ lost or re-added its entry, the replica did not die).
        if (item.state === 'running' && item.heartbeat_at !== null && item.heartbeat_at >= staleBefore) return { kind: 'held', heartbeatAt: item.heartbeat_at };
        if (Number(item.attempts) >= MAX_ITEM_STARTS) return giveUp(trx, jobId, index, Number(item.attempts), job.user_token_id, at);
        return startItem(trx, job, jobId, index, item, OPEN, at);
      });
    },

    async touchJobItem(claim, at) {
      const touched = await db
        .updateTable('job_items')
        .set({ heartbeat_at: at })
        .where('job_id', '=', claim.jobId)
        .where('item_index', '=', claim.index)
        .where('state', '=', 'running')
        .where('attempts', '=', claim.attempt)
        .executeTakeFirst();
      return Number(touched.numUpdatedRows) > 0;
    },

    async listStaleJobItems(staleBefore) {
      const rows = await db
        .selectFrom('job_items as i')
        .innerJoin('jobs as j', 'j.id', 'i.job_id')
        .select(['i.job_id', 'j.user_token_id', 'i.item_index'])
        .where('j.status', 'in', OPEN)
        .where('i.state', '=', 'running')
        .where((eb) => eb.or([eb('i.heartbeat_at', 'is', null), eb('i.heartbeat_at', '<', staleBefore)]))
        .orderBy('j.created_at')
        .orderBy('i.item_index')
        .execute();
      return rows.map((row) => ({ jobId: row.job_id, userTokenId: row.user_token_id, index: Number(row.item_index) }));
    },

    async countQueuedJobItems() {
      const row = await db
        .selectFrom('job_items as i')
        .innerJoin('jobs as j', 'j.id', 'i.job_id')
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('j.status', 'in', OPEN)
        .where('i.state', '=', 'queued')
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },

    async listQueuedJobItems(jobId, afterIndex, limit) {
      const rows = await db
        .selectFrom('job_items')
        .select('item_index')
        .where('job_id', '=', jobId)
        .where('state', '=', 'queued')
        .where('item_index', '>', afterIndex)
        .orderBy('item_index')
        .limit(limit)
        .execute();
      return rows.map((row) => Number(row.item_index));
    },

    async finishJobItem(claim, outcome, at) {
      return db.transaction().execute(async (trx) => {
        const ended = await trx
          .updateTable('job_items')
          .set(
            outcome.state === 'succeeded'
              ? { state: 'succeeded', result_path: outcome.resultPath, content_type: outcome.contentType, finished_at: at }
              : { state: 'failed', problem_code: outcome.problemCode, problem_detail: outcome.problemDetail, finished_at: at },
          )
          .where('job_id', '=', claim.jobId)
          .where('item_index', '=', claim.index)
          .where('state', '=', 'running')
          .where('attempts', '=', claim.attempt)
          .executeTakeFirst();
        if (Number(ended.numUpdatedRows) === 0) return false;
        const usage = outcome.state === 'succeeded' ? 'succeeded' : outcome.status < 500 ? 'refused' : 'failed';
        await upsertUsage(trx, claim.userTokenId, at.slice(0, 10), usage, outcome.state === 'succeeded' ? outcome.megapixels : 0);
        await settleJob(trx, claim.jobId, at);
        return true;
      });
    },

    async returnJobItem(claim) {
      // The start is taken back: the number a later claim gets is this one again, which is
      // safe, since this claim's holder is done with it.
      await db
        .updateTable('job_items')
        .set({ state: 'queued', attempts: claim.attempt - 1, heartbeat_at: null })
        .where('job_id', '=', claim.jobId)
        .where('item_index', '=', claim.index)
        .where('state', '=', 'running')
        .where('attempts', '=', claim.attempt)
        .execute();
    },

    async requeueRunningJobItems() {
      const result = await db.updateTable('job_items').set({ state: 'queued', heartbeat_at: null }).where('state', '=', 'running').executeTakeFirst();
      return Number(result.numUpdatedRows);
    },

    async listJobsFinishedBefore(before) {
      const rows = await db.selectFrom('jobs').select('id').where('finished_at', '<', before).execute();
      return rows.map((row) => row.id);
    },

    async deleteJob(jobId) {
      await db.transaction().execute(async (trx) => {
        await trx.deleteFrom('job_items').where('job_id', '=', jobId).execute();
        await trx.deleteFrom('job_webhook_attempts').where('job_id', '=', jobId).execute();
        await trx.deleteFrom('jobs').where('id', '=', jobId).execute();
      });
    },
  };
}
