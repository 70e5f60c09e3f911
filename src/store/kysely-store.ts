import { Kysely, Migrator, type Selectable } from 'kysely';
import { CUTOUT_VERSION } from '../cutout-version.js';
import type { Database } from './database.js';
import { createJobQueries } from './job-queries.js';
import { migrationsOf } from './migration-status.js';
import { migrationProvider } from './migrations.js';
import { judgeNewerSchema, SchemaTooNewError, type NewerSchema } from './schema-compatibility.js';
import { upsertUsage } from './usage-upsert.js';
import { createWebhookQueries } from './webhook-queries.js';
import { AccountEmailTakenError, TokenNameTakenError, type Account, type RemovalOutcome, type Store, type UserToken } from './store.js';

type UserTokenRow = Omit<Selectable<Database['user_tokens']>, 'account_id' | 'webhook_secret_generation'>;

const toUserToken = (row: UserTokenRow): UserToken => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  revokedAt: row.revoked_at,
  lastUsedAt: row.last_used_at,
});

const toAccount = (row: { id: string; email: string; created_at: string }): Account => ({ id: row.id, email: row.email, createdAt: row.created_at });

const userTokenColumns = ['id', 'name', 'prefix', 'created_at', 'expires_at', 'revoked_at', 'last_used_at', 'token_hash'] as const;

/**
 * Brings the schema up to date; run at every start. `schema` keeps Kysely's own migration
 * tables beside Cutout's (PostgreSQL): without it Kysely looks for them in every schema and
 * trips over another application's. On a database a newer Cutout migrated, nothing is run:
 * it resolves with what the newer one added when this `version` may serve on it (an older
 * replica restarting during a rolling upgrade), and throws {@link SchemaTooNewError} when not.
 */
export async function migrate(db: Kysely<Database>, schema?: string, version: string = CUTOUT_VERSION): Promise<NewerSchema | undefined> {
  const newer = async () => {
    const { unknown, pending, servesFrom } = await migrationsOf(db as Kysely<unknown>, schema);
    if (unknown.length === 0) return undefined;
    const verdict = judgeNewerSchema({ unknown: unknown.map((migration) => migration.name), pending, servesFrom }, version);
    if (verdict instanceof SchemaTooNewError) throw verdict;
    return verdict;
  };
  const before = await newer();
  if (before) return before;
  const { error, results } = await new Migrator({ db, provider: migrationProvider, migrationTableSchema: schema }).migrateToLatest();
  if (!error) return undefined;
  // A newer replica may have migrated between the look and the Migrator's lock.
  const since = await newer();
  if (since) return since;
  const failed = results?.find((r) => r.status === 'Error')?.migrationName;
  throw new Error(failed ? `database migration ${failed} failed` : 'database migration failed', { cause: error });
}

/** Unique-constraint violations from SQLite (SQLITE_CONSTRAINT_UNIQUE) and PostgreSQL (23505). */
function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505';
}

/**
 * The {@link Store} over any Kysely dialect: the SQLite and PostgreSQL adapters share every
 * query here.
 */
export function createKyselyStore(db: Kysely<Database>): Store {
  return {
    async createUserToken(token) {
      try {
        await db
          .insertInto('user_tokens')
          .values({
            id: token.id,
            name: token.name,
            token_hash: token.tokenHash,
            prefix: token.prefix,
            created_at: token.createdAt,
            expires_at: token.expiresAt,
            account_id: token.accountId ?? null,
          })
          .execute();
      } catch (error) {
        if (isUniqueViolation(error)) throw new TokenNameTakenError(token.name, { cause: error });
        throw error;
      }
      return { id: token.id, name: token.name, prefix: token.prefix, createdAt: token.createdAt, expiresAt: token.expiresAt, revokedAt: null, lastUsedAt: null };
    },

    async listUserTokens(filter = {}) {
      let query = db.selectFrom('user_tokens').select(userTokenColumns);
      if (filter.accountId !== undefined) query = query.where('account_id', '=', filter.accountId);
      const rows = await query.orderBy('created_at').orderBy('id').execute();
      return rows.map(toUserToken);
    },

    async findUserTokenByHash(tokenHash) {
      const row = await db.selectFrom('user_tokens').select(userTokenColumns).where('token_hash', '=', tokenHash).executeTakeFirst();
      return row && { ...toUserToken(row), tokenHash: row.token_hash };
    },

    async findActiveUserTokensByName(name) {
      const rows = await db.selectFrom('user_tokens').select(userTokenColumns).where('name', '=', name).where('revoked_at', 'is', null).execute();
      return rows.map(toUserToken);
    },

    async revokeUserToken(id, at) {
      const result = await db.updateTable('user_tokens').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
      return Number(result.numUpdatedRows) > 0;
    },

    async markUserTokenUsed(id, at) {
      await db.updateTable('user_tokens').set({ last_used_at: at }).where('id', '=', id).execute();
    },

    async createManagedToken(tokenHash, userTokenId, createdAt, expiresAt) {
      await db.insertInto('managed_tokens').values({ token_hash: tokenHash, user_token_id: userTokenId, created_at: createdAt, expires_at: expiresAt }).execute();
    },

    async findManagedToken(tokenHash) {
      const row = await db
        .selectFrom('managed_tokens as m')
        .innerJoin('user_tokens as u', 'u.id', 'm.user_token_id')
        .select(['m.token_hash as managed_token_hash', 'm.expires_at as managed_expires_at', 'u.id', 'u.name', 'u.prefix', 'u.created_at', 'u.expires_at', 'u.revoked_at', 'u.last_used_at', 'u.token_hash'])
        .where('m.token_hash', '=', tokenHash)
        .executeTakeFirst();
      if (!row) return undefined;
      return { tokenHash: row.managed_token_hash, userTokenId: row.id, expiresAt: row.managed_expires_at, userToken: toUserToken(row) };
    },

    async deleteExpiredManagedTokens(before) {
      const result = await db.deleteFrom('managed_tokens').where('expires_at', '<', before).executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    async createAccount(account) {
      try {
        await db.transaction().execute(async (trx) => {
          await trx.insertInto('accounts').values({ id: account.id, email: account.email, password_hash: account.passwordHash, created_at: account.createdAt }).execute();
          const { count } = await trx.selectFrom('accounts').select((eb) => eb.fn.countAll<number | string>().as('count')).executeTakeFirstOrThrow();
          if (Number(count) === 1) await trx.updateTable('user_tokens').set({ account_id: account.id }).where('account_id', 'is', null).execute();
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AccountEmailTakenError(account.email, { cause: error });
        throw error;
      }
      return { id: account.id, email: account.email, createdAt: account.createdAt };
    },

    async listAccounts() {
      const rows = await db.selectFrom('accounts').select(['id', 'email', 'created_at']).orderBy('created_at').orderBy('id').execute();
      return rows.map(toAccount);
    },

    async findAccountByEmail(email) {
      const row = await db.selectFrom('accounts').select(['id', 'email', 'created_at', 'password_hash']).where('email', '=', email).executeTakeFirst();
      return row && { ...toAccount(row), passwordHash: row.password_hash };
    },

    async setAccountPassword(accountId, passwordHash) {
      return db.transaction().execute(async (trx) => {
        const updated = await trx.updateTable('accounts').set({ password_hash: passwordHash }).where('id', '=', accountId).executeTakeFirst();
        if (Number(updated.numUpdatedRows) === 0) return undefined;
        const deleted = await trx.deleteFrom('dashboard_sessions').where('account_id', '=', accountId).executeTakeFirst();
        return Number(deleted.numDeletedRows);
      });
    },

    async createDashboardSession(tokenHash, accountId, createdAt, expiresAt) {
      await db.insertInto('dashboard_sessions').values({ token_hash: tokenHash, account_id: accountId, created_at: createdAt, expires_at: expiresAt }).execute();
    },

    async findDashboardSession(tokenHash) {
      const row = await db
        .selectFrom('dashboard_sessions as s')
        .innerJoin('accounts as a', 'a.id', 's.account_id')
        .select(['s.token_hash', 's.expires_at', 'a.id', 'a.email', 'a.created_at'])
        .where('s.token_hash', '=', tokenHash)
        .executeTakeFirst();
      return row && { tokenHash: row.token_hash, expiresAt: row.expires_at, account: toAccount(row) };
    },

    async deleteDashboardSession(tokenHash) {
      await db.deleteFrom('dashboard_sessions').where('token_hash', '=', tokenHash).execute();
    },

    async deleteExpiredDashboardSessions(before) {
      const result = await db.deleteFrom('dashboard_sessions').where('expires_at', '<', before).executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    async claimSetupCode(candidate, createdAt) {
      await db
        .insertInto('setup_code')
        .values({ id: 1, code: candidate, created_at: createdAt })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      const row = await db.selectFrom('setup_code').select('code').where('id', '=', 1).executeTakeFirstOrThrow();
      return row.code;
    },

    async consumeSetupCode(code) {
      const result = await db.deleteFrom('setup_code').where('id', '=', 1).where('code', '=', code).executeTakeFirst();
      return Number(result.numDeletedRows) === 1;
    },

    async recordRemoval(userTokenId, day, outcome: RemovalOutcome, megapixels) {
      await upsertUsage(db, userTokenId, day, outcome, megapixels);
    },

    async listDailyUsage(accountId, fromDay) {
      const rows = await db
        .selectFrom('usage_daily as d')
        .innerJoin('user_tokens as u', 'u.id', 'd.user_token_id')
        .select(['d.user_token_id', 'd.day', 'd.succeeded', 'd.refused', 'd.failed', 'd.megapixels'])
        .where('u.account_id', '=', accountId)
        .where('d.day', '>=', fromDay)
        .orderBy('d.day')
        .orderBy('d.user_token_id')
        .execute();
      // PostgreSQL's integers and doubles may come back as strings; the counts are small.
      return rows.map((row) => ({
        userTokenId: row.user_token_id,
        day: row.day,
        succeeded: Number(row.succeeded),
        refused: Number(row.refused),
        failed: Number(row.failed),
        megapixels: Number(row.megapixels),
      }));
    },

    ...createJobQueries(db),
    ...createWebhookQueries(db),

    close: () => db.destroy(),
  };
}
