import type { Generated } from 'kysely';

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
    /** Bumped by every rotation of the token's webhook signing secret; 0 until the first. */
    webhook_secret_generation: Generated<number>;
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
  /** A batch of images made by one user token (`POST /api/v1/jobs`). */
  jobs: {
    id: string;
    /** The creating token's account at creation; null for a token without one. */
    account_id: string | null;
    user_token_id: string;
    /** The output options as sent, JSON text. */
    options: string;
    status: 'queued' | 'running' | 'done' | 'cancelled';
    created_at: string;
    finished_at: string | null;
    webhook_url: string | null;
    /** Unique per user token while set; freed when the key is reused after 24 hours. */
    idempotency_key: string | null;
    /** SHA-256 of the request's canonical JSON, to tell a retry from a different request. */
    body_hash: string | null;
    item_count: number;
    /** Null until a job with a webhook_url ends; then its delivery's state. */
    webhook_state: 'pending' | 'delivering' | 'delivered' | 'failed' | null;
    /** When a `pending` delivery is due. */
    webhook_next_at: string | null;
    /** Until when the sender that claimed a `delivering` delivery holds it. */
    webhook_lease_until: string | null;
    /** Attempts claimed so far; a claim's attempt number fences its result. */
    webhook_attempts: Generated<number>;
  };
  /** One image of a job. */
  job_items: {
    job_id: string;
    /** 0-based, in the order the client listed the images. */
    item_index: number;
    client_id: string | null;
    /** Null for an uploaded image, which `input_path` names. */
    image_url: string | null;
    /** An uploaded image, relative to the data directory. */
    input_path: string | null;
    state: 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
    problem_code: string | null;
    problem_detail: string | null;
    /** Relative to the data directory. */
    result_path: string | null;
    content_type: string | null;
    /**
     * Starts that counted: a claim adds one, a hand-back (SIGTERM, a busy model) takes it
     * back. It also fences a claim: only the claim whose number it still is may end the item.
     */
    attempts: number;
    finished_at: string | null;
    /** While `running` on a replica of the fleet: when its holder last said it still works on it. */
    heartbeat_at: string | null;
  };
  /** One attempt to deliver a job's webhook. */
  job_webhook_attempts: {
    job_id: string;
    /** From 1. */
    attempt: number;
    at: string;
    /** The receiver's HTTP status, or null when there was none (refused address, timeout…). */
    status: number | null;
    error: string | null;
    duration_ms: number;
  };
  /** A replaced generation of a user token's webhook signing secret, still signing beside the current one. */
  webhook_secret_overlaps: {
    user_token_id: string;
    generation: number;
    /** Until when its signature is added to every webhook of the token's jobs. */
    signs_until: string;
  };
}
