import type { FastifyBaseLogger } from 'fastify';
import type { Store } from '../store/store.js';
import type { WebhookClaim, WebhookNext } from '../store/webhook-records.js';
import type { WebhookAddressRules } from './webhook-address.js';
import { jobSummary } from './job-view.js';
import { postWebhook, type WebhookPostResult } from './webhook-post.js';
import type { WebhookSecrets } from '../auth/webhook-secrets.js';
import { signWebhook, WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from '../auth/webhook-signature.js';
import { WEBHOOK_SCHEDULE, type WebhookSchedule } from './webhook-schedule.js';

const SECOND = 1000;
/** Not Standard Webhooks' own: the attempt's number, from 1, for the receiver's logs. */
const ATTEMPT_HEADER = 'Cutout-Webhook-Attempt';
/** An attempt that is not sent: the job's token has no secret (a job made before the check at submission). */
const NO_SECRET = 'not sent: the token has no webhook signing secret';

/** How an attempt ended, as `cutout_webhook_deliveries_total` counts it. */
export type WebhookOutcome = 'delivered' | 'retried' | 'failed';

export interface WebhookSenderParts {
  store: Store;
  secrets: WebhookSecrets;
  rules: WebhookAddressRules;
  log: FastifyBaseLogger;
  schedule?: WebhookSchedule;
  /** Deadline of one attempt, connection and status line included (default 10 s). */
  timeoutMs?: number;
  /** How often the store is asked for due deliveries (default 1 s). */
  pollMs?: number;
  /** How long a claim holds a delivery (default three timeouts): a sender that dies keeps it no longer. */
  leaseMs?: number;
  /** Deliveries taken per poll (default 8), sent at once. */
  batch?: number;
  now?: () => Date;
  onOutcome?: (outcome: WebhookOutcome) => void;
}

/** A job's event, as the payload's `event` names it. */
const eventOf = (claim: WebhookClaim) => `job.${claim.job.status}`;

/**
 * Delivers the webhooks of ended jobs from the store's outbox, apart from the runner: it polls
 * for due deliveries, claims each for one attempt with a lease (so replicas on one database
 * never send the same attempt twice), POSTs the job's summary, signed, and records the attempt
 * with the state that follows: `delivered` on a 2xx, else `pending` again after the schedule's
 * next delay, or `failed` once the window since the job ended is over.
 *
 * @example const sender = new WebhookSender(parts); sender.start(); … await sender.close()
 */
export class WebhookSender {
  readonly #parts: WebhookSenderParts;
  readonly #schedule: WebhookSchedule;
  readonly #timeoutMs: number;
  readonly #now: () => Date;
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<number> | undefined;
  #closed = false;

  constructor(parts: WebhookSenderParts) {
    this.#parts = parts;
    this.#schedule = parts.schedule ?? WEBHOOK_SCHEDULE;
    this.#timeoutMs = parts.timeoutMs ?? 10 * SECOND;
    this.#now = parts.now ?? (() => new Date());
  }

  /** Polls now and then every `pollMs`. */
  start(): void {
    this.#closed = false;
    void this.deliverDue();
    this.#timer = setInterval(() => void this.deliverDue(), this.#parts.pollMs ?? SECOND);
    this.#timer.unref();
  }

  /** Sends the deliveries due now (one attempt each); resolves with how many were attempted. */
  deliverDue(): Promise<number> {
    if (this.#closed) return Promise.resolve(0);
    this.#polling ??= this.#poll().finally(() => (this.#polling = undefined));
    return this.#polling;
  }

  /** Stops polling and waits for the attempts under way. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#polling;
  }

  async #poll(): Promise<number> {
    const { store, log, batch = 8 } = this.#parts;
    try {
      const now = this.#now();
      const due = await store.listDueWebhooks(now.toISOString(), batch);
      const leaseUntil = new Date(now.getTime() + (this.#parts.leaseMs ?? 3 * this.#timeoutMs)).toISOString();
      const claims = await Promise.all(due.map((delivery) => store.claimWebhook(delivery.jobId, delivery.attempts, now.toISOString(), leaseUntil)));
      const mine = claims.filter((claim) => claim !== undefined);
      // Each attempt on its own: one that cannot be signed or recorded (the store went away)
      // keeps its claim until the lease ends, and is then tried again as the next attempt.
      const attempts = await Promise.allSettled(mine.map((claim) => this.#attempt(claim)));
      for (const [index, attempt] of attempts.entries()) {
        if (attempt.status === 'rejected') log.warn({ err: attempt.reason, jobId: mine[index].job.id, attempt: mine[index].attempt }, 'job webhook attempt could not be made or recorded; retrying after its lease');
      }
      return mine.length;
    } catch (error) {
      log.warn({ err: error }, 'job webhooks could not be read or recorded; trying again at the next poll');
      return 0;
    }
  }

  async #attempt(claim: WebhookClaim): Promise<void> {
    const { store, secrets, rules, log } = this.#parts;
    const { job } = claim;
    const event = eventOf(claim);
    const body = JSON.stringify({ event, ...jobSummary(job, await store.countJobItems(job.id)) });
    const started = this.#now();
    // Every secret that signs now: during a rotation's overlap the replaced ones too, so a
    // receiver with either accepts the delivery. Never one nobody was shown: none, no POST.
    const keys = await secrets.secretsOf(job.userTokenId, claim.signing.map((signing) => signing.generation));
    const headers = keys.length > 0 ? signedHeaders(keys, `${job.id}:${event}`, started, body, claim.attempt) : undefined;
    const result: WebhookPostResult = headers ? await postWebhook(job.webhookUrl, body, headers, rules, this.#timeoutMs) : { error: NO_SECRET };
    const ended = this.#now();
    const ok = 'status' in result && result.status >= 200 && result.status <= 299;
    const next = ok ? ({ state: 'delivered' } as const) : this.#after(claim, ended);
    const recorded = await store.recordWebhookAttempt(job.id, { attempt: claim.attempt, at: started.toISOString(), ...attemptColumns(result), durationMs: ended.getTime() - started.getTime() }, next);
    // The URL stays out of the log: it may carry the receiver's own credentials.
    const fields = { jobId: job.id, event, attempt: claim.attempt, ...attemptColumns(result) };
    if (!recorded) {
      log.warn(fields, 'job webhook attempt outlived its lease; another sender has the delivery');
      return;
    }
    const outcome: WebhookOutcome = next.state === 'delivered' ? 'delivered' : next.state === 'pending' ? 'retried' : 'failed';
    this.#parts.onOutcome?.(outcome);
    if (outcome === 'delivered') log.info(fields, 'job webhook delivered');
    else if (outcome === 'retried') log.info({ ...fields, nextAttemptAt: next.state === 'pending' ? next.nextAttemptAt : undefined }, 'job webhook attempt failed; retrying later');
    else log.warn(fields, 'job webhook failed: no 2xx within the retry window');
  }

  /** What follows a failed attempt: the next one on the schedule, or `failed` past the window. */
  #after(claim: WebhookClaim, ended: Date): WebhookNext {
    const next = ended.getTime() + this.#schedule.delayAfter(claim.attempt);
    const endedJob = Date.parse(claim.job.finishedAt ?? ended.toISOString());
    if (next > endedJob + this.#schedule.windowMs) return { state: 'failed' };
    return { state: 'pending', nextAttemptAt: new Date(next).toISOString() };
  }
}

/**
 * The Standard Webhooks headers of one attempt: its id (the same on every attempt of the
 * delivery), its time and one signature per secret, and Cutout's attempt number.
 */
function signedHeaders(secrets: readonly string[], id: string, sentAt: Date, body: string, attempt: number): Record<string, string> {
  return {
    [WEBHOOK_ID_HEADER]: id,
    [WEBHOOK_TIMESTAMP_HEADER]: String(Math.floor(sentAt.getTime() / 1000)),
    [WEBHOOK_SIGNATURE_HEADER]: signWebhook(secrets, id, sentAt, body),
    [ATTEMPT_HEADER]: String(attempt),
  };
}

/** An attempt's status and error columns. */
function attemptColumns(result: WebhookPostResult): { status: number | null; error: string | null } {
  return 'status' in result ? { status: result.status, error: null } : { status: null, error: result.error };
}
