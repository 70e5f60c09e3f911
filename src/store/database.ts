/** Kysely's view of Cutout's tables (see migrations.ts). */
export interface Database {
  user_tokens: {
    id: string;
    name: string;
    token_hash: string;
    prefix: string;
    created_at: string;
    expires_at: string | null;
    revoked_at: string | null;
    last_used_at: string | null;
    /** Null only for tokens made before any account existed; the first account adopts them. */
    account_id: string | null;
  };
  managed_tokens: {
    token_hash: string;
    user_token_id: string;
    created_at: string;
    expires_at: string;
  };
  accounts: {
    id: string;
    /** Lower-cased; unique. */
    email: string;
    /** `scrypt$N$r$p$salt$hash` (see src/dashboard/passwords.ts); never the password. */
    password_hash: string;
    created_at: string;
  };
  dashboard_sessions: {
    /** SHA-256 of the session cookie's secret. */
    token_hash: string;
    account_id: string;
    created_at: string;
    expires_at: string;
  };
  /** One row per user token and UTC day, upserted at every background request. */
  usage_daily: {
    user_token_id: string;
    /** YYYY-MM-DD, UTC. */
    day: string;
    succeeded: number;
    /** Answered 4xx: the request or the image was refused. */
    refused: number;
    /** Answered 5xx: busy, timed out or failed inside Cutout. */
    failed: number;
    /** Sum of the input images' megapixels, of the removals that succeeded. */
    megapixels: number;
  };
  /** The one-time setup code of an installation with no account yet; one row at most (id 1). */
  setup_code: {
    id: number;
    code: string;
    created_at: string;
  };
}
