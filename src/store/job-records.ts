/** A job's status: `queued` until an item starts, `running`, then `done` or `cancelled`. */
export type JobStatus = 'queued' | 'running' | 'done' | 'cancelled';

/** One item's state; `succeeded` and `failed` are final, and so is `cancelled`. */
export type JobItemState = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

/** A job as created by `POST /api/v1/jobs`, before its first item runs. */
export interface NewJob {
  /** Random and unguessable (`src/jobs/job-ids.ts`). */
  id: string;
  userTokenId: string;
  /** The output options as the client sent them, already checked by the option table. */
  options: Record<string, unknown>;
  createdAt: string;
  webhookUrl: string | null;
  idempotencyKey: string | null;
  bodyHash: string | null;
}

/** One image of a new job, in the order the client listed them. */
export interface NewJobItem {
  /** The client's own id, for the result's file name. */
  clientId: string | null;
  /** The image's URL, or null for an uploaded one. */
  imageUrl: string | null;
  /** An uploaded image, relative to the data directory. */
  inputPath?: string | null;
}

/** A stored job. `accountId` is the creating token's account, null for a token made before any account. */
export interface JobRecord {
  id: string;
  accountId: string | null;
  userTokenId: string;
  options: Record<string, unknown>;
  status: JobStatus;
  createdAt: string;
  finishedAt: string | null;
  webhookUrl: string | null;
  itemCount: number;
  bodyHash: string | null;
}

/** A stored item. */
export interface JobItemRecord {
  index: number;
  clientId: string | null;
  imageUrl: string | null;
  inputPath: string | null;
  state: JobItemState;
  problemCode: string | null;
  problemDetail: string | null;
  /** Relative to the data directory. */
  resultPath: string | null;
  contentType: string | null;
  attempts: number;
}

/** How many of a job's items are in each state. */
export type JobCounts = Record<JobItemState, number>;

/** An item the runner has taken: marked `running`, its attempt counted. */
export interface ClaimedJobItem {
  jobId: string;
  index: number;
  /** Where to fetch the image, or null when it was uploaded to `inputPath`. */
  imageUrl: string | null;
  inputPath: string | null;
  userTokenId: string;
  options: Record<string, unknown>;
  /** This claim's attempt; the item's state changes only for the claim that holds it. */
  attempt: number;
}

/**
 * The recovery rule, one for every runner: an item is started at most this many times. A start
 * that ended because its server died (a crash, an out-of-memory kill, a replica gone) counts;
 * a hand-back (SIGTERM, a busy model) does not. The claim that would start it once more fails
 * it instead, with `too_many_starts`, and its job goes on.
 */
export const MAX_ITEM_STARTS = 5;

/**
 * What a claim found: an item to work on, one it failed for having been started too often, or
 * (the fleet's claim of a given item) one whose holder still heartbeats, last at `heartbeatAt`.
 */
export type JobItemClaim =
  | { kind: 'claimed'; item: ClaimedJobItem }
  | { kind: 'gave_up'; jobId: string; index: number; starts: number }
  | { kind: 'held'; heartbeatAt: string };

/** The caps a new job is checked against, in the transaction that makes it. */
export interface JobCaps {
  /** Unfinished jobs a token may have (CUTOUT_JOB_MAX_OPEN). */
  maxOpenJobs: number;
  /** Images a token may have waiting in its unfinished jobs (CUTOUT_JOB_MAX_QUEUED_ITEMS). */
  maxQueuedItems: number;
}

/** A new job made, or the token's load that refused it. */
export type JobCreation = { made: true } | { made: false; openJobs: number; queuedItems: number };

/** How a claimed item ended. */
export type JobItemOutcome =
  | { state: 'succeeded'; resultPath: string; contentType: string; megapixels: number }
  | { state: 'failed'; problemCode: string; problemDetail: string; status: number };

/**
 * The jobs' part of the store: jobs, their items, and the runner's claims on them. Owner
 * checks are part of the queries: a job found with `userTokenId` belongs to that token's
 * account (or, for a token without one, to the token itself).
 */
export interface JobStore {
  /**
   * Inserts a job and its items in one transaction, with the token's caps checked inside it:
   * of two submissions at once, the second sees the first's job and images. Nothing is
   * written when the job would pass a cap. Without caps (a test's own jobs) none is checked.
   */
  createJob(job: NewJob, items: readonly NewJobItem[], caps?: JobCaps): Promise<JobCreation>;
  /** The job a token made with an idempotency key, if any. */
  findJobByIdempotencyKey(userTokenId: string, key: string): Promise<JobRecord | undefined>;
  /** Frees an old job's idempotency key for a new job. */
  releaseIdempotencyKey(jobId: string): Promise<void>;
  /** The job, if it exists and belongs to the account (or token) of `userTokenId`. */
  findJob(jobId: string, userTokenId: string): Promise<JobRecord | undefined>;
  /** The jobs `findJob` would find for `userTokenId`, newest first, at most `limit`. */
  listJobs(userTokenId: string, limit: number): Promise<JobRecord[]>;
  /**
   * The job, if it belongs to the account: made by one of its tokens, or with it as the
   * job's account. The dashboard's view of "this account's job", for a signed-in owner.
   */
  findJobOfAccount(jobId: string, accountId: string): Promise<JobRecord | undefined>;
  /** The account's jobs (as {@link findJobOfAccount} owns them), newest first, at most `limit`. */
  listJobsOfAccount(accountId: string, limit: number): Promise<JobRecord[]>;
  countJobItems(jobId: string): Promise<JobCounts>;
  /** The job's items that ended (succeeded or failed) at or after `since`: its recent pace. */
  countJobItemsEndedSince(jobId: string, since: string): Promise<number>;
  /** Items by index, from `offset`, at most `limit`. */
  listJobItems(jobId: string, offset: number, limit: number): Promise<JobItemRecord[]>;
  findJobItem(jobId: string, index: number): Promise<JobItemRecord | undefined>;
  /** A token's unfinished jobs and their queued items, for its caps. */
  openJobLoad(userTokenId: string): Promise<{ openJobs: number; queuedItems: number }>;
  /**
   * Cancels an unfinished job: the job and its queued and running items become `cancelled`;
   * finished items keep their results. False when the job was already done or cancelled.
   */
  cancelJob(jobId: string, at: string): Promise<boolean>;
  /** Unfinished jobs, oldest first, with the token that made each: the runner's turns. */
  listOpenJobs(): Promise<{ id: string; userTokenId: string }[]>;
  /**
   * Takes the job's first queued item for the runner, if another did not take it first; an
   * item started {@link MAX_ITEM_STARTS} times already is failed instead (`gave_up`).
   */
  claimJobItem(jobId: string, at: string): Promise<JobItemClaim | undefined>;
  /**
   * Takes one given item for a runner of the fleet (BullMQ handed it over): from `queued`, or
   * from `running` when another replica's claim on it was lost (that replica died or stopped
   * renewing its lock, and its heartbeat is older than `staleBefore`), counting a new start
   * either way so that only this claim can end it. Undefined when the item is finished or
   * cancelled or its job is gone; `held` when its holder still heartbeats; `gave_up` as
   * `claimJobItem`.
   */
  claimJobItemAt(jobId: string, index: number, at: string, staleBefore: string): Promise<JobItemClaim | undefined>;
  /** The claim's holder still works on the item; false when the claim is no longer the item's. */
  touchJobItem(claim: ClaimedJobItem, at: string): Promise<boolean>;
  /** Running items of unfinished jobs whose holder has not heartbeaten since `staleBefore`. */
  listStaleJobItems(staleBefore: string): Promise<{ jobId: string; userTokenId: string; index: number }[]>;
  /** Queued items of unfinished jobs, over all jobs: the `cutout_job_items_queued` gauge. */
  countQueuedJobItems(): Promise<number>;
  /** The indexes of a job's queued items, in order, from `afterIndex` on, at most `limit`. */
  listQueuedJobItems(jobId: string, afterIndex: number, limit: number): Promise<number[]>;
  /**
   * Ends a claimed item and, in the same transaction, counts it in the token's usage as a
   * synchronous request would be counted, and marks the job done when it was its last item.
   * False, and nothing written, when the claim is no longer the item's (cancelled, or taken
   * again after a restart).
   */
  finishJobItem(claim: ClaimedJobItem, outcome: JobItemOutcome, at: string): Promise<boolean>;
  /** Hands a claimed item back to the queue (the server was busy or stopping): this start does not count. */
  returnJobItem(claim: ClaimedJobItem): Promise<void>;
  /**
   * At start on one node: every `running` item, whose runner is gone, back to `queued`, its
   * start counted (that server died with it); returns how many.
   */
  requeueRunningJobItems(): Promise<number>;
  /** Jobs that finished before `before`. */
  listJobsFinishedBefore(before: string): Promise<string[]>;
  /** Deletes a job and its items. */
  deleteJob(jobId: string): Promise<void>;
}
