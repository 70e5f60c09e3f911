import { Kysely, type Migration, type MigrationProvider, sql } from 'kysely';

/**
 * Cutout's schema, one migration per change, in order. Written with Kysely's schema
 * builder so that SQLite and PostgreSQL run the same definitions.
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
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
