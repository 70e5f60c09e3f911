import type { Selectable } from 'kysely';
import type { Database } from './database.js';
import type { JobRecord } from './job-records.js';

/** A job's row as a {@link JobRecord}. */
export const toJob = (row: Selectable<Database['jobs']>): JobRecord => ({
  id: row.id,
  accountId: row.account_id,
  userTokenId: row.user_token_id,
  options: JSON.parse(row.options) as Record<string, unknown>,
  status: row.status,
  createdAt: row.created_at,
  finishedAt: row.finished_at,
  webhookUrl: row.webhook_url,
  // PostgreSQL's integers may come back as strings.
  itemCount: Number(row.item_count),
  bodyHash: row.body_hash,
});
