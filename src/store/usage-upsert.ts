import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './database.js';
import type { RemovalOutcome } from './store.js';

/**
 * Counts one removal of a user token on `day`: one upsert, on the store's connection or
 * inside a transaction (a job's item is counted in the one that ends it).
 */
export async function upsertUsage(db: Kysely<Database> | Transaction<Database>, userTokenId: string, day: string, outcome: RemovalOutcome, megapixels: number): Promise<void> {
  const counts = { succeeded: 0, refused: 0, failed: 0, [outcome]: 1 };
  await db
    .insertInto('usage_daily')
    .values({ user_token_id: userTokenId, day, ...counts, megapixels })
    .onConflict((oc) =>
      oc.columns(['user_token_id', 'day']).doUpdateSet({
        succeeded: sql`usage_daily.succeeded + excluded.succeeded`,
        refused: sql`usage_daily.refused + excluded.refused`,
        failed: sql`usage_daily.failed + excluded.failed`,
        megapixels: sql`usage_daily.megapixels + excluded.megapixels`,
      }),
    )
    .execute();
}
