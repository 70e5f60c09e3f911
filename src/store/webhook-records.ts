import type { JobRecord } from './job-records.js';

/**
 * A job's webhook delivery: `pending` (due at `nextAttemptAt`), `delivering` (claimed by a
 * sender until its lease ends), `delivered` (a 2xx came back) or `failed` (no 2xx within the
 * retry window). Null on the job until it ends.
 */
export type WebhookState = 'pending' | 'delivering' | 'delivered' | 'failed';

/** One attempt to deliver a webhook, as kept for the job's answer. */
export interface WebhookAttemptRecord {
  /** From 1. */
  attempt: number;
  at: string;
  /** The receiver's HTTP status, or null when no answer came. */
  status: number | null;
  /** Why the attempt did not succeed, in a few words (never the receiver's body). */
  error: string | null;
  durationMs: number;
}

/** What the job's answer shows of its webhook. */
export interface WebhookDeliveryRecord {
  /** Null while the job has not ended. */
  state: WebhookState | null;
  nextAttemptAt: string | null;
  attempts: WebhookAttemptRecord[];
}

/** A generation of a user token's signing secret that signs now. */
export interface SigningGeneration {
  generation: number;
  /** Null for the token's current secret; for a replaced one, the end of its overlap. */
  signsUntil: string | null;
}

/** How a rotation treats the secrets it replaces. */
export interface WebhookRotation {
  now: string;
  /** Until when the replaced secret goes on signing; null ends it, and every earlier one, now. */
  replacedSignsUntil: string | null;
  /** How many replaced generations may sign at once; older ones stop at the rotation. */
  keepReplaced: number;
}

/** A delivery a sender holds: the job it is for and the attempt it may record. */
export interface WebhookClaim {
  job: JobRecord & { webhookUrl: string };
  /** This claim's attempt number; only its result is recorded. */
  attempt: number;
  /** The generations of the job's token's signing secret that sign now, current first; empty when it has none. */
  signing: SigningGeneration[];
  leaseUntil: string;
}

/** What becomes of a delivery after an attempt. */
export type WebhookNext = { state: 'delivered' } | { state: 'pending'; nextAttemptAt: string } | { state: 'failed' };

/**
 * The webhooks' part of the store: an outbox on the jobs' rows. `finishJobItem` and
 * `cancelJob` make a job's delivery `pending` in the transaction that ends the job; the
 * sender finds due deliveries, claims one with a conditional update (one winner among
 * replicas), and records each attempt with the state that follows it.
 */
export interface WebhookStore {
  /** Deliveries due at `now`: pending ones whose time has come, and claimed ones whose lease ended. */
  listDueWebhooks(now: string, limit: number): Promise<{ jobId: string; attempts: number }[]>;
  /**
   * Takes a due delivery for one attempt, if no other sender took it since `seenAttempts`
   * was read; it is then `delivering` until `leaseUntil`.
   */
  claimWebhook(jobId: string, seenAttempts: number, now: string, leaseUntil: string): Promise<WebhookClaim | undefined>;
  /**
   * Records a claimed attempt and moves the delivery on; false, and nothing written, when the
   * claim is no longer the delivery's (its lease ran out and another sender took it).
   */
  recordWebhookAttempt(jobId: string, attempt: WebhookAttemptRecord, next: WebhookNext): Promise<boolean>;
  /** The job's delivery and its attempts, oldest first; undefined for a job without a webhook_url. */
  findWebhookDelivery(jobId: string): Promise<WebhookDeliveryRecord | undefined>;
  /**
   * Bumps a user token's signing-secret generation, the one it replaces signing on as
   * `rotation` says; returns the new generation, or undefined for no such token.
   */
  rotateWebhookSecret(userTokenId: string, rotation: WebhookRotation): Promise<number | undefined>;
  /** The generations of a user token's signing secret that sign at `now`: the current one first, then replaced ones, newest first; empty when it has none. */
  findSigningGenerations(userTokenId: string, now: string): Promise<SigningGeneration[]>;
  /** True once a user token has a signing secret (its generation is past 0). */
  hasWebhookSecret(userTokenId: string): Promise<boolean>;
}
