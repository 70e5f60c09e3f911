import { Kysely, type Migration, type MigrationProvider, sql } from 'kysely';

/**
 * Cutout's schema, one migration per change, in order. Written with Kysely's schema
 * builder so that SQLite and PostgreSQL run the same definitions.
 *
 * The upgrade policy (docs/operations.md, "Upgrade and rollback"), which
 * test/upgrade.test.ts checks against the previous release frozen in
 * test/fixtures/previous-schema/:
 * - Forward only: no `down`. A released migration is never edited, renamed or removed; a
 *   change is a new entry whose name sorts after every other (databases record the names
 *   they ran; an older Cutout starts on a database that ran names it does not know only while
 *   `cutout_schema.serves_from` names its release or an earlier one: schema-compatibility.ts).
 * - A migration that breaks an older release's queries (only in a new minor version) raises
 *   `serves_from` to the first release that works with it.
 * - Additive within a minor version: new tables, indexes, and columns that are nullable or
 *   have a default. Nothing is dropped, renamed or retyped, no constraint on an existing
 *   column tightened, no existing value rewritten into another meaning: the previous
 *   release's queries give the same answers on the newer schema, so its replicas keep
 *   serving during a rolling upgrade. A change that cannot be made so waits for a new minor
 *   version, is named in CHANGELOG.md, and is made in two steps (one version stops using a
 *   column, the next drops it), so that each schema still serves the version before it.
 */
const migrations: Record<string, Migration> = {
  '0001-tokens': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('user_tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text')
        .addColumn('revoked_at', 'text')
        .addColumn('last_used_at', 'text')
        .execute();
      // Names identify tokens for `cutout tokens revoke NAME`: unique among active ones.
      await db.schema
        .createIndex('user_tokens_active_name')
        .on('user_tokens')
        .column('name')
        .unique()
        .where(sql.ref('revoked_at'), 'is', null)
        .execute();
      await db.schema
        .createTable('managed_tokens')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_token_id', 'text', (c) => c.notNull().references('user_tokens.id').onDelete('cascade'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('managed_tokens_expires_at').on('managed_tokens').column('expires_at').execute();
    },
  },
  // The token dashboard: owners' accounts, their sign-in sessions, and removals
  // counted per user token and day. Tokens made before this have no account until the first
  // account is created, which adopts them.
  '0002-accounts-sessions-usage': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('accounts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('email', 'text', (c) => c.notNull().unique())
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.alterTable('user_tokens').addColumn('account_id', 'text', (c) => c.references('accounts.id')).execute();
      await db.schema.createIndex('user_tokens_account_id').on('user_tokens').column('account_id').execute();
      await db.schema
        .createTable('dashboard_sessions')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('dashboard_sessions_expires_at').on('dashboard_sessions').column('expires_at').execute();
      await db.schema
        .createTable('usage_daily')
        .addColumn('user_token_id', 'text', (c) => c.notNull().references('user_tokens.id').onDelete('cascade'))
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('succeeded', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('refused', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('failed', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('megapixels', 'double precision', (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint('usage_daily_pkey', ['user_token_id', 'day'])
        .execute();
    },
  },
  // Several replicas on one database: the setup code of a fresh installation is
  // kept here, so that every replica asks for the one they all printed, and it can be used once.
  '0003-setup-code': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('setup_code')
        // Always 1: at most one code exists.
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('code', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  // Jobs: many images in one call, worked through by the runner from the store, so that a
  // restart resumes them. An item's usage is counted in the transaction that ends it.
  '0004-jobs': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('jobs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.references('accounts.id').onDelete('cascade'))
        .addColumn('user_token_id', 'text', (c) => c.notNull().references('user_tokens.id').onDelete('cascade'))
        .addColumn('options', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('finished_at', 'text')
        .addColumn('webhook_url', 'text')
        .addColumn('idempotency_key', 'text')
        .addColumn('body_hash', 'text')
        .addColumn('item_count', 'integer', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('jobs_status').on('jobs').columns(['status', 'created_at']).execute();
      await db.schema.createIndex('jobs_finished_at').on('jobs').column('finished_at').execute();
      await db.schema
        .createIndex('jobs_idempotency_key')
        .on('jobs')
        .columns(['user_token_id', 'idempotency_key'])
        .unique()
        .where(sql.ref('idempotency_key'), 'is not', null)
        .execute();
      await db.schema
        .createTable('job_items')
        .addColumn('job_id', 'text', (c) => c.notNull().references('jobs.id').onDelete('cascade'))
        .addColumn('item_index', 'integer', (c) => c.notNull())
        .addColumn('client_id', 'text')
        .addColumn('image_url', 'text')
        // An uploaded image, relative to the data directory, for an item without an image_url.
        .addColumn('input_path', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('problem_code', 'text')
        .addColumn('problem_detail', 'text')
        .addColumn('result_path', 'text')
        .addColumn('content_type', 'text')
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('finished_at', 'text')
        .addPrimaryKeyConstraint('job_items_pkey', ['job_id', 'item_index'])
        .execute();
      await db.schema.createIndex('job_items_state').on('job_items').columns(['job_id', 'state', 'item_index']).execute();
    },
  },
  // Webhooks: a job that ends with a webhook_url gets a delivery in the same transaction (an
  // outbox on the job's row), which the webhook sender claims with a lease, so that replicas
  // sharing the database never send the same attempt twice. Each attempt is kept for the job's
  // answer. A user token keeps only the generation of its signing secret; the secret itself is
  // derived from the server's webhook key (src/auth/webhook-secrets.ts).
  '0005-job-webhooks': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('jobs').addColumn('webhook_state', 'text').execute();
      await db.schema.alterTable('jobs').addColumn('webhook_next_at', 'text').execute();
      await db.schema.alterTable('jobs').addColumn('webhook_lease_until', 'text').execute();
      await db.schema.alterTable('jobs').addColumn('webhook_attempts', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema.createIndex('jobs_webhook_due').on('jobs').columns(['webhook_state', 'webhook_next_at']).execute();
      await db.schema
        .createTable('job_webhook_attempts')
        .addColumn('job_id', 'text', (c) => c.notNull().references('jobs.id').onDelete('cascade'))
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('status', 'integer')
        .addColumn('error', 'text')
        .addColumn('duration_ms', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('job_webhook_attempts_pkey', ['job_id', 'attempt'])
        .execute();
      await db.schema.alterTable('user_tokens').addColumn('webhook_secret_generation', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    },
  },
  // One recovery rule for every runner: the holder of a running item says so now and then
  // (`heartbeat_at`), so that the fleet's reconciliation can tell an item whose replica died
  // from one still being worked on, whatever BullMQ remembers. Additive: older code ignores it.
  '0006-job-item-recovery': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('job_items').addColumn('heartbeat_at', 'text').execute();
    },
  },
  // Rotating a webhook signing secret without refusing a delivery: a replaced generation keeps
  // signing until `signs_until` (src/auth/webhook-secrets.ts), beside the token's current one.
  '0007-webhook-rotation': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('webhook_secret_overlaps')
        .addColumn('user_token_id', 'text', (c) => c.notNull().references('user_tokens.id').onDelete('cascade'))
        .addColumn('generation', 'integer', (c) => c.notNull())
        .addColumn('signs_until', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('webhook_secret_overlaps_pkey', ['user_token_id', 'generation'])
        .execute();
    },
  },
  // Which releases' code serves on this schema, for a replica older than the schema that
  // restarts during a rolling upgrade (src/store/schema-compatibility.ts). A migration that
  // breaks an older release (a new minor version's second step) raises `serves_from`.
  '0008-schema-compatibility': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('cutout_schema')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('serves_from', 'text', (c) => c.notNull())
        .execute();
      await sql`insert into cutout_schema (id, serves_from) values (1, ${'0.1.0'})`.execute(db);
    },
  },
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
