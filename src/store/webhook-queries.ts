import type { Kysely, Transaction } from 'kysely';
import type { Database } from './database.js';
import { toJob } from './job-row.js';
import type { SigningGeneration, WebhookStore } from './webhook-records.js';

/**
 * Makes an ended job's webhook delivery `pending`, due at once, when the job has a
 * webhook_url and no delivery yet: called in the transaction that ends the job, so that a job
 * never ends without its delivery (nor gets two).
 */
export async function queueWebhook(trx: Transaction<Database>, jobId: string, at: string): Promise<void> {
  await trx
    .updateTable('jobs')
    .set({ webhook_state: 'pending', webhook_next_at: at })
    .where('id', '=', jobId)
    .where('status', 'in', ['done', 'cancelled'])
    .where('webhook_url', 'is not', null)
    .where('webhook_state', 'is', null)
    .execute();
}

/**
 * The {@link WebhookStore} over any Kysely dialect, part of `createKyselyStore`. A claim is
 * one conditional update on the attempt count the sender saw, so two senders (two replicas
 * on one PostgreSQL, or one SQLite file) never both take the same attempt.
 */
export function createWebhookQueries(db: Kysely<Database>): WebhookStore {
  return {
    async listDueWebhooks(now, limit) {
      const rows = await db
        .selectFrom('jobs')
        .select(['id', 'webhook_attempts'])
        .where((eb) =>
          eb.or([
            eb.and([eb('webhook_state', '=', 'pending'), eb('webhook_next_at', '<=', now)]),
            eb.and([eb('webhook_state', '=', 'delivering'), eb('webhook_lease_until', '<', now)]),
          ]),
        )
        .orderBy('webhook_next_at')
        .limit(limit)
        .execute();
      return rows.map((row) => ({ jobId: row.id, attempts: Number(row.webhook_attempts) }));
    },

    async claimWebhook(jobId, seenAttempts, now, leaseUntil) {
      const attempt = seenAttempts + 1;
      const taken = await db
        .updateTable('jobs')
        .set({ webhook_state: 'delivering', webhook_lease_until: leaseUntil, webhook_attempts: attempt })
        .where('id', '=', jobId)
        .where('webhook_attempts', '=', seenAttempts)
        .where((eb) =>
          eb.or([
            eb.and([eb('webhook_state', '=', 'pending'), eb('webhook_next_at', '<=', now)]),
            eb.and([eb('webhook_state', '=', 'delivering'), eb('webhook_lease_until', '<', now)]),
          ]),
        )
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) === 0) return undefined;
      const row = await db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
      if (!row || row.webhook_url === null) return undefined;
      const job = { ...toJob(row), webhookUrl: row.webhook_url };
      return { job, attempt, signing: await signingGenerations(db, job.userTokenId, now), leaseUntil };
    },

    async recordWebhookAttempt(jobId, attempt, next) {
      return db.transaction().execute(async (trx) => {
        const moved = await trx
          .updateTable('jobs')
          .set({ webhook_state: next.state, webhook_next_at: next.state === 'pending' ? next.nextAttemptAt : null, webhook_lease_until: null })
          .where('id', '=', jobId)
          .where('webhook_state', '=', 'delivering')
          .where('webhook_attempts', '=', attempt.attempt)
          .executeTakeFirst();
        if (Number(moved.numUpdatedRows) === 0) return false;
        await trx
          .insertInto('job_webhook_attempts')
          .values({ job_id: jobId, attempt: attempt.attempt, at: attempt.at, status: attempt.status, error: attempt.error, duration_ms: attempt.durationMs })
          .execute();
        return true;
      });
    },

    async findWebhookDelivery(jobId) {
      const job = await db.selectFrom('jobs').select(['webhook_url', 'webhook_state', 'webhook_next_at']).where('id', '=', jobId).executeTakeFirst();
      if (!job || job.webhook_url === null) return undefined;
      const rows = await db.selectFrom('job_webhook_attempts').selectAll().where('job_id', '=', jobId).orderBy('attempt').execute();
      return {
        state: job.webhook_state,
        nextAttemptAt: job.webhook_state === 'pending' ? job.webhook_next_at : null,
        // PostgreSQL's integers may come back as strings.
        attempts: rows.map((row) => ({ attempt: Number(row.attempt), at: row.at, status: row.status === null ? null : Number(row.status), error: row.error, durationMs: Number(row.duration_ms) })),
      };
    },

    async rotateWebhookSecret(userTokenId, rotation) {
      return db.transaction().execute(async (trx) => {
        // The bump first: on PostgreSQL it locks the row, so concurrent rotations take turns.
        const bumped = await trx
          .updateTable('user_tokens')
          .set((eb) => ({ webhook_secret_generation: eb('webhook_secret_generation', '+', 1) }))
          .where('id', '=', userTokenId)
          .executeTakeFirst();
        if (Number(bumped.numUpdatedRows) === 0) return undefined;
        const row = await trx.selectFrom('user_tokens').select('webhook_secret_generation').where('id', '=', userTokenId).executeTakeFirstOrThrow();
        const generation = Number(row.webhook_secret_generation);
        const replaced = generation - 1;
        if (rotation.replacedSignsUntil !== null && replaced > 0) {
          await trx.insertInto('webhook_secret_overlaps').values({ user_token_id: userTokenId, generation: replaced, signs_until: rotation.replacedSignsUntil }).execute();
        }
        // Ended now, or the ones whose overlap is over and those past the number kept.
        let ended = trx.deleteFrom('webhook_secret_overlaps').where('user_token_id', '=', userTokenId);
        if (rotation.replacedSignsUntil !== null) ended = ended.where((eb) => eb.or([eb('signs_until', '<=', rotation.now), eb('generation', '<', generation - rotation.keepReplaced)]));
        await ended.execute();
        return generation;
      });
    },

    findSigningGenerations: (userTokenId, now) => signingGenerations(db, userTokenId, now),

    async hasWebhookSecret(userTokenId) {
      const row = await db.selectFrom('user_tokens').select('webhook_secret_generation').where('id', '=', userTokenId).executeTakeFirst();
      return row !== undefined && Number(row.webhook_secret_generation) > 0;
    },
  };
}

/** The generations of a token's secret that sign at `now`: its current one, then replaced ones still in their overlap, newest first. */
async function signingGenerations(db: Kysely<Database>, userTokenId: string, now: string): Promise<SigningGeneration[]> {
  const token = await db.selectFrom('user_tokens').select('webhook_secret_generation').where('id', '=', userTokenId).executeTakeFirst();
  // PostgreSQL's integers may come back as strings.
  const current = Number(token?.webhook_secret_generation ?? 0);
  if (current === 0) return [];
  const replaced = await db
    .selectFrom('webhook_secret_overlaps')
    .select(['generation', 'signs_until'])
    .where('user_token_id', '=', userTokenId)
    .where('generation', '<', current)
    .where('signs_until', '>', now)
    .orderBy('generation', 'desc')
    .execute();
  return [{ generation: current, signsUntil: null }, ...replaced.map((row) => ({ generation: Number(row.generation), signsUntil: row.signs_until }))];
}
