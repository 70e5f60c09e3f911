import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { addressPolicy } from '../src/fetch/address-policy.js';
import { checkWebhookUrl, webhookAddressRules, type WebhookAddressRules } from '../src/jobs/webhook-address.js';
import { cutoutFailure } from './helpers/cutout-failure.js';
import { loadWebhookKey, WEBHOOK_KEY_FILE } from '../src/auth/webhook-key.js';
import { REPLACED_SECRETS_KEPT, WEBHOOK_SECRET_OVERLAP_MS, WebhookSecrets } from '../src/auth/webhook-secrets.js';
import { WebhookSender, type WebhookOutcome } from '../src/jobs/webhook-sender.js';
import type { WebhookSchedule } from '../src/jobs/webhook-schedule.js';
import { deriveSigningSecret, signWebhook } from '../src/auth/webhook-signature.js';
import { ModelService } from '../src/model/model-service.js';
import type { NewJob, NewJobItem } from '../src/store/job-records.js';
import type { Store } from '../src/store/store.js';
import { multipartBody } from '../scripts/lib/multipart-body.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { makePhoto } from './helpers/images.js';
import { squareSegmenter } from './helpers/square-segmenter.js';
import { freshStoreEach, storeEngines } from './helpers/stores.js';

/**
 * Job webhooks: the outbox in the store (both engines), the sender's claims, retries and
 * signature, the address rules at submission and at delivery, and the API's view of it all,
 * against real receivers listening on loopback.
 */

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A receiver on 127.0.0.1 that answers each request with the next of `statuses` (the last one repeats). */
async function startReceiver(statuses: number[] = [204], delayMs = 0) {
  const received: Received[] = [];
  const server: Server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body });
      const status = statuses[Math.min(received.length, statuses.length) - 1];
      setTimeout(() => response.writeHead(status).end(), delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/cutout?key=receiver-credential-123`;
  receivers.push(server);
  return { url, received };
}
const receivers: Server[] = [];
afterAll(() => {
  for (const server of receivers) server.close();
});

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Log lines of a sender, as a pino logger writes them. */
function capturedLog() {
  const lines: string[] = [];
  const log = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
  return { log, lines };
}

const FAST: WebhookSchedule = { delayAfter: () => 30, windowMs: 60_000 };
const LOOPBACK_RULES: WebhookAddressRules = { policy: addressPolicy(true), allowHosts: [], denyHosts: [] };

/** Whether the `standardwebhooks` library, as a receiver runs it, accepts a delivery with this secret. */
function verifies(secret: string, headers: IncomingHttpHeaders | Record<string, string>, body: string): boolean {
  try {
    new Webhook(secret).verify(body, headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

/** The signatures of a `webhook-signature` header, without their `v1,`. */
const signaturesIn = (header: unknown) => String(header).split(' ').map((part) => part.replace(/^v1,/, ''));

describe('signatures and secrets', () => {
  it('are Standard Webhooks: whsec_ and base64, v1 signatures the library verifies over the exact id, time and body, and nothing else', () => {
    const key = randomBytes(32);
    const secret = deriveSigningSecret(key, 'token-1', 1);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = '{"event":"job.done","id":"job_x"}';
    const sentAt = new Date();
    const t = String(Math.floor(sentAt.getTime() / 1000));
    const signature = signWebhook([secret], 'job_x:job.done', sentAt, body);
    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    // By hand, as a receiver without the library does it: HMAC-SHA256 keyed with the secret's bytes.
    const byHand = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(`job_x:job.done.${t}.${body}`).digest('base64');
    expect(signature).toBe(`v1,${byHand}`);

    const headers = { 'webhook-id': 'job_x:job.done', 'webhook-timestamp': t, 'webhook-signature': signature };
    expect(verifies(secret, headers, body)).toBe(true);
    expect(verifies(secret, headers, body.replace('job_x', 'job_y'))).toBe(false);
    expect(verifies(secret, { ...headers, 'webhook-id': 'job_y:job.done' }, body)).toBe(false);
    expect(verifies(deriveSigningSecret(key, 'token-1', 2), headers, body)).toBe(false);
    expect(verifies(deriveSigningSecret(key, 'token-2', 1), headers, body)).toBe(false);
    expect(verifies(deriveSigningSecret(randomBytes(32), 'token-1', 1), headers, body)).toBe(false);
    // Signed 6 minutes ago: the library refuses a timestamp more than 5 minutes from its clock.
    const old = new Date(sentAt.getTime() - 6 * 60_000);
    expect(verifies(secret, { ...headers, 'webhook-timestamp': String(Math.floor(old.getTime() / 1000)), 'webhook-signature': signWebhook([secret], 'job_x:job.done', old, body) }, body)).toBe(false);
    expect(verifies(secret, { 'webhook-id': 'job_x:job.done', 'webhook-timestamp': t }, body)).toBe(false);
  });

  it('carry one signature per secret, any of which a receiver accepts', () => {
    const key = randomBytes(32);
    const [current, replaced, other] = [2, 1, 3].map((generation) => deriveSigningSecret(key, 'token-1', generation));
    const body = '{"event":"job.cancelled"}';
    const sentAt = new Date();
    const signature = signWebhook([current, replaced], 'job_x:job.cancelled', sentAt, body);
    expect(signature.split(' ')).toEqual([signWebhook([current], 'job_x:job.cancelled', sentAt, body), signWebhook([replaced], 'job_x:job.cancelled', sentAt, body)]);
    const headers = { 'webhook-id': 'job_x:job.cancelled', 'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)), 'webhook-signature': signature };
    expect(verifies(current, headers, body)).toBe(true);
    expect(verifies(replaced, headers, body)).toBe(true);
    expect(verifies(other, headers, body)).toBe(false);
    expect(() => signWebhook([], 'job_x:job.cancelled', sentAt, body)).toThrow();
  });

  it('derive from one key file per data directory, made once with mode 0600 even by processes racing to make it', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'cutout-webhook-key-'));
    try {
      const keys = await Promise.all(Array.from({ length: 6 }, () => loadWebhookKey(dataDir)));
      for (const key of keys) expect(key.equals(keys[0])).toBe(true);
      expect(keys[0]).toHaveLength(32);
      expect((await stat(join(dataDir, WEBHOOK_KEY_FILE))).mode & 0o777).toBe(0o600);
      expect((await loadWebhookKey(dataDir)).equals(keys[0])).toBe(true);
      const given = randomBytes(32);
      expect((await loadWebhookKey(dataDir, given.toString('hex'))).equals(given)).toBe(true);
      expect((await loadWebhookKey(dataDir, given.toString('base64url'))).equals(given)).toBe(true);
      await expect(loadWebhookKey(dataDir, 'short')).rejects.toThrow(/^CUTOUT_WEBHOOK_KEY must hold 32 bytes/);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

const T0 = '2030-01-01T00:00:00.000Z';

async function userToken(store: Store): Promise<string> {
  const id = randomUUID();
  await store.createUserToken({ id, name: id, tokenHash: randomBytes(32).toString('hex'), prefix: 'cut_user_x', createdAt: T0, expiresAt: null });
  return id;
}

/** A user token with a signing secret, which a token needs before its jobs may name a webhook_url. */
async function signingToken(store: Store, dataDir: string): Promise<{ token: string; secret: string }> {
  const token = await userToken(store);
  const secret = (await new WebhookSecrets(store, { dataDir }).rotate(token))!;
  return { token, secret };
}

const CAPS = { maxOpenJobs: 100, maxQueuedItems: 10_000 };
const ONE_IMAGE: NewJobItem[] = [{ imageUrl: 'https://example.com/1.jpg', clientId: null }];
/** Makes a job of one image in the store, as the API does once it has checked the request. */
const storeJob = (store: Store, job: NewJob) => store.createJob(job, ONE_IMAGE, CAPS);

const newJob = (userTokenId: string, webhookUrl: string | null): NewJob => ({
  id: `job_${randomBytes(16).toString('base64url')}`,
  userTokenId,
  options: { format: 'png' },
  createdAt: T0,
  webhookUrl,
  idempotencyKey: null,
  bodyHash: null,
});

for (const engine of storeEngines()) {
  describe.skipIf(engine.skip)(`${engine.name}: the webhook outbox`, () => {
    const fresh = freshStoreEach(engine);
    let dataDir: string;
    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'cutout-webhook-'));
    });
    afterAll(() => rm(dataDir, { recursive: true, force: true }));

    it('makes a delivery pending in the transaction that ends the job, only for a job with a webhook_url', async () => {
      const token = await userToken(fresh.store);
      const hooked = newJob(token, 'https://hooks.example/a');
      const plain = newJob(token, null);
      await storeJob(fresh.store, hooked);
      await storeJob(fresh.store, plain);
      expect(await fresh.store.findWebhookDelivery(hooked.id)).toEqual({ state: null, nextAttemptAt: null, attempts: [] });
      expect(await fresh.store.findWebhookDelivery(plain.id)).toBeUndefined();
      expect(await fresh.store.listDueWebhooks('2031-01-01T00:00:00.000Z', 10)).toEqual([]);

      for (const job of [hooked, plain]) {
        const claim = await fresh.store.claimJobItem(job.id, '2030-01-01T00:00:30.000Z');
        if (claim?.kind !== 'claimed') throw new Error(`no item claimed: ${JSON.stringify(claim)}`);
        expect(await fresh.store.finishJobItem(claim.item, { state: 'succeeded', resultPath: 'x.png', contentType: 'image/png', megapixels: 1 }, '2030-01-01T00:01:00.000Z')).toBe(true);
      }
      expect(await fresh.store.findWebhookDelivery(hooked.id)).toEqual({ state: 'pending', nextAttemptAt: '2030-01-01T00:01:00.000Z', attempts: [] });
      expect(await fresh.store.listDueWebhooks('2030-01-01T00:00:59.000Z', 10)).toEqual([]);
      expect(await fresh.store.listDueWebhooks('2030-01-01T00:01:00.000Z', 10)).toEqual([{ jobId: hooked.id, attempts: 0 }]);

      const cancelled = newJob(token, 'https://hooks.example/b');
      await storeJob(fresh.store, cancelled);
      expect(await fresh.store.cancelJob(cancelled.id, '2030-01-01T00:02:00.000Z')).toBe(true);
      // Cancelling again changes nothing, and queues nothing twice.
      expect(await fresh.store.cancelJob(cancelled.id, '2030-01-01T00:03:00.000Z')).toBe(false);
      expect(await fresh.store.findWebhookDelivery(cancelled.id)).toEqual({ state: 'pending', nextAttemptAt: '2030-01-01T00:02:00.000Z', attempts: [] });

      await fresh.store.deleteJob(cancelled.id);
      expect(await fresh.store.findWebhookDelivery(cancelled.id)).toBeUndefined();
    });

    it('hands an attempt to one claim; a claim whose lease ran out is taken again, and its late result is not recorded', async () => {
      const token = await userToken(fresh.store);
      const job = newJob(token, 'https://hooks.example/a');
      await storeJob(fresh.store, job);
      await fresh.store.cancelJob(job.id, T0);
      const now = '2030-01-01T00:00:01.000Z';
      const claims = await Promise.all([0, 1, 2].map(() => fresh.store.claimWebhook(job.id, 0, now, '2030-01-01T00:00:31.000Z')));
      const won = claims.filter((claim) => claim !== undefined);
      expect(won).toHaveLength(1);
      expect(won[0]).toMatchObject({ attempt: 1, signing: [], job: { id: job.id, status: 'cancelled', webhookUrl: 'https://hooks.example/a' } });
      expect(await fresh.store.listDueWebhooks('2030-01-01T00:00:30.000Z', 10)).toEqual([]);
      // Its sender died: once the lease is over, the delivery is due again, as attempt 2.
      expect(await fresh.store.listDueWebhooks('2030-01-01T00:00:32.000Z', 10)).toEqual([{ jobId: job.id, attempts: 1 }]);
      const again = await fresh.store.claimWebhook(job.id, 1, '2030-01-01T00:00:32.000Z', '2030-01-01T00:01:02.000Z');
      expect(again?.attempt).toBe(2);
      const late = await fresh.store.recordWebhookAttempt(job.id, { attempt: 1, at: now, status: 204, error: null, durationMs: 40_000 }, { state: 'delivered' });
      expect(late).toBe(false);
      expect(await fresh.store.recordWebhookAttempt(job.id, { attempt: 2, at: '2030-01-01T00:00:32.000Z', status: 500, error: null, durationMs: 12 }, { state: 'pending', nextAttemptAt: '2030-01-01T00:01:00.000Z' })).toBe(true);
      expect(await fresh.store.findWebhookDelivery(job.id)).toEqual({
        state: 'pending',
        nextAttemptAt: '2030-01-01T00:01:00.000Z',
        attempts: [{ attempt: 2, at: '2030-01-01T00:00:32.000Z', status: 500, error: null, durationMs: 12 }],
      });
    });

    it('two senders on two connections to one database deliver each attempt once', async () => {
      const { url, received } = await startReceiver([204], 150);
      const { token } = await signingToken(fresh.store, dataDir);
      const jobs = [newJob(token, url), newJob(token, url), newJob(token, url)];
      for (const job of jobs) {
        await storeJob(fresh.store, job);
        await fresh.store.cancelJob(job.id, new Date().toISOString());
      }
      const other = await fresh.place.open();
      // Two senders per connection, all polling at once.
      const senders = [fresh.store, other, fresh.store, other].map(
        (store) => new WebhookSender({ store, secrets: new WebhookSecrets(store, { dataDir }), rules: LOOPBACK_RULES, log: pino({ level: 'silent' }), schedule: FAST }),
      );
      const attempted = await Promise.all(senders.map((sender) => sender.deliverDue()));
      expect(attempted.reduce((a, b) => a + b, 0)).toBe(3);
      expect(received.map((r) => JSON.parse(r.body).id).sort()).toEqual(jobs.map((job) => job.id).sort());
      for (const job of jobs) expect(await fresh.store.findWebhookDelivery(job.id)).toMatchObject({ state: 'delivered', attempts: [{ attempt: 1, status: 204 }] });
      expect(await Promise.all(senders.map((sender) => sender.deliverDue()))).toEqual([0, 0, 0, 0]);
    });

    it('counts rotations per token: each one a new generation, so a new secret', async () => {
      const token = await userToken(fresh.store);
      const secrets = new WebhookSecrets(fresh.store, { dataDir });
      expect(await fresh.store.hasWebhookSecret(token)).toBe(false);
      const first = await secrets.rotate(token);
      expect(await fresh.store.hasWebhookSecret(token)).toBe(true);
      const second = await secrets.rotate(token);
      expect(first).toMatch(/^whsec_/);
      expect(second).not.toBe(first);
      expect(second).toBe(await secrets.secretOf(token, 2));
      expect(await secrets.rotate(randomUUID())).toBeUndefined();
      expect(await fresh.store.hasWebhookSecret(randomUUID())).toBe(false);
      // Only the generation is stored, never a secret.
      const raw = await fresh.place.rawContents();
      expect(raw).not.toContain(second!.slice(6));
      expect(raw).not.toContain(first!.slice(6));
    });

    it('keeps a replaced secret signing for its overlap, at most two replaced at once, or none when the rotation ends them', async () => {
      const token = await userToken(fresh.store);
      const at = (hours: number) => new Date(Date.parse(T0) + hours * 3600_000);
      let now = at(0);
      const secrets = new WebhookSecrets(fresh.store, { dataDir, now: () => now });
      const signing = (hours: number) => fresh.store.findSigningGenerations(token, at(hours).toISOString());
      const until = (hours: number) => at(hours).toISOString();
      expect(await signing(0)).toEqual([]);
      await secrets.rotate(token);
      // The first secret replaces none.
      expect(await signing(0)).toEqual([{ generation: 1, signsUntil: null }]);
      await secrets.rotate(token);
      expect(WEBHOOK_SECRET_OVERLAP_MS).toBe(24 * 3600_000);
      expect(await signing(0)).toEqual([
        { generation: 2, signsUntil: null },
        { generation: 1, signsUntil: until(24) },
      ]);
      now = at(1);
      await secrets.rotate(token);
      expect(await signing(1)).toEqual([
        { generation: 3, signsUntil: null },
        { generation: 2, signsUntil: until(25) },
        { generation: 1, signsUntil: until(24) },
      ]);
      // Its overlap is over: generation 1 signs no more, generation 2 still does.
      expect(await signing(24)).toEqual([
        { generation: 3, signsUntil: null },
        { generation: 2, signsUntil: until(25) },
      ]);
      // A fourth within the day: the oldest replaced one stops, so a webhook carries at most three signatures.
      expect(REPLACED_SECRETS_KEPT).toBe(2);
      now = at(2);
      await secrets.rotate(token);
      expect(await signing(2)).toEqual([
        { generation: 4, signsUntil: null },
        { generation: 3, signsUntil: until(26) },
        { generation: 2, signsUntil: until(25) },
      ]);
      // One leaked: ending the earlier ones leaves the new one alone.
      await secrets.rotate(token, { endEarlier: true });
      expect(await signing(2)).toEqual([{ generation: 5, signsUntil: null }]);
      await secrets.rotate(token);
      expect(await signing(2)).toEqual([
        { generation: 6, signsUntil: null },
        { generation: 5, signsUntil: until(26) },
      ]);
    });

    it('claims a delivery with the generations that sign at the claim', async () => {
      const token = await userToken(fresh.store);
      const secrets = new WebhookSecrets(fresh.store, { dataDir, now: () => new Date(T0) });
      await secrets.rotate(token);
      await secrets.rotate(token);
      const job = newJob(token, 'https://hooks.example/a');
      await storeJob(fresh.store, job);
      await fresh.store.cancelJob(job.id, T0);
      const inOverlap = await fresh.store.claimWebhook(job.id, 0, '2030-01-01T23:59:59.000Z', '2030-01-02T00:00:30.000Z');
      expect(inOverlap?.signing).toEqual([
        { generation: 2, signsUntil: null },
        { generation: 1, signsUntil: '2030-01-02T00:00:00.000Z' },
      ]);
      // Its lease ran out past the overlap: the next claim signs with the current secret alone.
      const after = await fresh.store.claimWebhook(job.id, 1, '2030-01-02T00:00:31.000Z', '2030-01-02T00:01:00.000Z');
      expect(after?.signing).toEqual([{ generation: 2, signsUntil: null }]);
    });
  });
}

describe('delivery', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cutout-webhook-'));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));
  const engine = storeEngines()[0];
  const fresh = freshStoreEach(engine);

  it('checks the address again at each attempt, on the address resolved then: a name rebound to a private address is not reached', async () => {
    const { token } = await signingToken(fresh.store, dataDir);
    const job = newJob(token, 'http://hooks.example/cutout');
    await storeJob(fresh.store, job);
    await fresh.store.cancelJob(job.id, new Date().toISOString());
    const answers = ['10.0.0.7'];
    const lookup: LookupFunction = (_host, _options, callback) => callback(null, answers.map((address) => ({ address, family: 4 })));
    const rules = { ...webhookAddressRules({ urlAllowPrivate: false, urlAllowHosts: [], urlDenyHosts: [] }), lookup };
    const sender = new WebhookSender({ store: fresh.store, secrets: new WebhookSecrets(fresh.store, { dataDir }), rules, log: pino({ level: 'silent' }), schedule: FAST });
    expect(await sender.deliverDue()).toBe(1);
    const delivery = await fresh.store.findWebhookDelivery(job.id);
    expect(delivery).toMatchObject({ state: 'pending', attempts: [{ attempt: 1, status: null }] });
    expect(delivery!.attempts[0].error).toBe('webhook_url: host hooks.example resolves to a non-public address (private).');
  });

  it('at submission, refuses a host that does not resolve in time, without waiting for DNS', async () => {
    const hanging: LookupFunction = () => {};
    const rules = { ...webhookAddressRules({ urlAllowPrivate: false, urlAllowHosts: [], urlDenyHosts: [] }), lookup: hanging };
    const started = Date.now();
    const error = await cutoutFailure(checkWebhookUrl('https://slow.example/hook', rules, 100), 'url_not_allowed');
    expect(error.message).toBe('webhook_url: its host could not be resolved within 100 ms.');
    expect(Date.now() - started).toBeLessThan(2000);
    const nowhere: LookupFunction = (_host, _options, callback) => callback(Object.assign(new Error('nx'), { code: 'ENOTFOUND' }), []);
    const unresolved = await cutoutFailure(checkWebhookUrl('https://typo.example/hook', { ...rules, lookup: nowhere }), 'url_not_allowed');
    expect(unresolved.message).toBe('webhook_url: host typo.example could not be resolved (ENOTFOUND).');
  });

  it('gives up once the window after the job ended is over: failed, with every attempt kept', async () => {
    const { url, received } = await startReceiver([503]);
    const { token } = await signingToken(fresh.store, dataDir);
    const job = newJob(token, url);
    await storeJob(fresh.store, job);
    await fresh.store.cancelJob(job.id, new Date().toISOString());
    const outcomes: WebhookOutcome[] = [];
    const sender = new WebhookSender({
      store: fresh.store,
      secrets: new WebhookSecrets(fresh.store, { dataDir }),
      rules: LOOPBACK_RULES,
      log: pino({ level: 'silent' }),
      schedule: { delayAfter: () => 40, windowMs: 300 },
      pollMs: 10,
      onOutcome: (outcome) => outcomes.push(outcome),
    });
    sender.start();
    try {
      await until(async () => (await fresh.store.findWebhookDelivery(job.id))?.state === 'failed', 'the delivery to fail');
    } finally {
      await sender.close();
    }
    const delivery = (await fresh.store.findWebhookDelivery(job.id))!;
    expect(delivery.nextAttemptAt).toBeNull();
    expect(delivery.attempts.length).toBeGreaterThanOrEqual(2);
    expect(delivery.attempts.every((attempt) => attempt.status === 503)).toBe(true);
    expect(received).toHaveLength(delivery.attempts.length);
    expect(outcomes).toEqual([...Array(delivery.attempts.length - 1).fill('retried'), 'failed']);
  });

  it('follows no redirect: a 3xx is a failed attempt like any other non-2xx', async () => {
    const { url, received } = await startReceiver([302]);
    const { token } = await signingToken(fresh.store, dataDir);
    const job = newJob(token, url);
    await storeJob(fresh.store, job);
    await fresh.store.cancelJob(job.id, new Date().toISOString());
    const sender = new WebhookSender({ store: fresh.store, secrets: new WebhookSecrets(fresh.store, { dataDir }), rules: LOOPBACK_RULES, log: pino({ level: 'silent' }), schedule: FAST });
    await sender.deliverDue();
    expect(received).toHaveLength(1);
    expect(await fresh.store.findWebhookDelivery(job.id)).toMatchObject({ state: 'pending', attempts: [{ attempt: 1, status: 302, error: null }] });
  });

  it('answers a receiver that does not answer in time as an attempt without a status', async () => {
    const { url } = await startReceiver([204], 2000);
    const { token } = await signingToken(fresh.store, dataDir);
    const job = newJob(token, url);
    await storeJob(fresh.store, job);
    await fresh.store.cancelJob(job.id, new Date().toISOString());
    const sender = new WebhookSender({ store: fresh.store, secrets: new WebhookSecrets(fresh.store, { dataDir }), rules: LOOPBACK_RULES, log: pino({ level: 'silent' }), schedule: FAST, timeoutMs: 200 });
    await sender.deliverDue();
    expect(await fresh.store.findWebhookDelivery(job.id)).toMatchObject({ state: 'pending', attempts: [{ attempt: 1, status: null, error: 'no answer within 200 ms' }] });
  });

  it('signs with every secret of a rotation\'s overlap, each one accepted by the library, and with the current one alone after it', async () => {
    const { url, received } = await startReceiver([204]);
    const token = await userToken(fresh.store);
    const secrets = new WebhookSecrets(fresh.store, { dataDir });
    const first = (await secrets.rotate(token))!;
    const second = (await secrets.rotate(token))!;
    const job = newJob(token, url);
    await storeJob(fresh.store, job);
    await fresh.store.cancelJob(job.id, new Date().toISOString());
    const sender = new WebhookSender({ store: fresh.store, secrets, rules: LOOPBACK_RULES, log: pino({ level: 'silent' }), schedule: FAST });
    expect(await sender.deliverDue()).toBe(1);
    const [{ headers, body }] = received;
    expect(headers['webhook-id']).toBe(`${job.id}:job.cancelled`);
    expect(headers['webhook-timestamp']).toMatch(/^\d{10}$/);
    expect(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(5);
    expect(headers['cutout-webhook-attempt']).toBe('1');
    expect(signaturesIn(headers['webhook-signature'])).toHaveLength(2);
    expect(verifies(second, headers, body)).toBe(true);
    expect(verifies(first, headers, body)).toBe(true);
    expect(verifies((await secrets.rotate(randomUUID())) ?? deriveSigningSecret(randomBytes(32), token, 1), headers, body)).toBe(false);

    // Rotated 25 hours ago: the secret replaced then signs no more.
    const later = await userToken(fresh.store);
    const dayAgo = new WebhookSecrets(fresh.store, { dataDir, now: () => new Date(Date.now() - 25 * 3600_000) });
    const old = (await dayAgo.rotate(later))!;
    const current = (await dayAgo.rotate(later))!;
    const laterJob = newJob(later, url);
    await storeJob(fresh.store, laterJob);
    await fresh.store.cancelJob(laterJob.id, new Date().toISOString());
    expect(await sender.deliverDue()).toBe(1);
    const last = received[1];
    expect(signaturesIn(last.headers['webhook-signature'])).toHaveLength(1);
    expect(verifies(current, last.headers, last.body)).toBe(true);
    expect(verifies(old, last.headers, last.body)).toBe(false);
  });

  it('signs with both keys while the server\'s key is replaced, so a receiver with the old key\'s secret accepts until the overlap ends', async () => {
    const { url, received } = await startReceiver([204, 204]);
    const token = await userToken(fresh.store);
    const oldKey = randomBytes(32).toString('hex');
    const newKey = randomBytes(32).toString('base64url');
    const before = (await new WebhookSecrets(fresh.store, { dataDir, key: oldKey }).rotate(token))!;
    const during = new WebhookSecrets(fresh.store, { dataDir, key: newKey, previousKey: oldKey });
    const after = (await during.rotate(token))!;
    const deliver = async (secrets: WebhookSecrets) => {
      const job = newJob(token, url);
      await storeJob(fresh.store, job);
      await fresh.store.cancelJob(job.id, new Date().toISOString());
      expect(await new WebhookSender({ store: fresh.store, secrets, rules: LOOPBACK_RULES, log: pino({ level: 'silent' }), schedule: FAST }).deliverDue()).toBe(1);
      return received.at(-1)!;
    };
    // Generations 2 (current) and 1 (in its overlap), each under the new key, then the old.
    const overlap = await deliver(during);
    expect(signaturesIn(overlap.headers['webhook-signature'])).toHaveLength(4);
    expect(verifies(before, overlap.headers, overlap.body)).toBe(true);
    expect(verifies(after, overlap.headers, overlap.body)).toBe(true);
    // The overlap ended (the variable unset): the old key's secrets sign no more.
    const ended = await deliver(new WebhookSecrets(fresh.store, { dataDir, key: newKey }));
    expect(signaturesIn(ended.headers['webhook-signature'])).toHaveLength(2);
    expect(verifies(after, ended.headers, ended.body)).toBe(true);
    expect(verifies(before, ended.headers, ended.body)).toBe(false);
    // The same key given twice adds no signature.
    expect(await new WebhookSecrets(fresh.store, { dataDir, key: newKey, previousKey: newKey }).secretsOf(token, [2])).toEqual([await during.secretOf(token, 2)]);
    expect(() => new WebhookSecrets(fresh.store, { dataDir, previousKey: 'short' })).toThrow(/^CUTOUT_WEBHOOK_KEY_PREVIOUS must hold 32 bytes/);
  });

  it('sends nothing for a token without a secret (a job made before the check): the attempt says why, and the next is signed once the token has one', async () => {
    const { url, received } = await startReceiver([204]);
    const token = await userToken(fresh.store);
    const job = newJob(token, url);
    await storeJob(fresh.store, job);
    await fresh.store.cancelJob(job.id, new Date().toISOString());
    const secrets = new WebhookSecrets(fresh.store, { dataDir });
    const sender = new WebhookSender({ store: fresh.store, secrets, rules: LOOPBACK_RULES, log: pino({ level: 'silent' }), schedule: { delayAfter: () => 0, windowMs: 60_000 } });
    expect(await sender.deliverDue()).toBe(1);
    expect(received).toHaveLength(0);
    expect(await fresh.store.findWebhookDelivery(job.id)).toMatchObject({ state: 'pending', attempts: [{ attempt: 1, status: null, error: 'not sent: the token has no webhook signing secret' }] });
    const secret = (await secrets.rotate(token))!;
    expect(await sender.deliverDue()).toBe(1);
    expect(received).toHaveLength(1);
    expect(verifies(secret, received[0].headers, received[0].body)).toBe(true);
    expect(await fresh.store.findWebhookDelivery(job.id)).toMatchObject({ state: 'delivered', attempts: [{ attempt: 1 }, { attempt: 2, status: 204 }] });
  });
});

describe('a job with a webhook_url', () => {
  let photos: Server;
  let photoBase: string;
  beforeAll(async () => {
    const png = await makePhoto('png', 40, 30);
    photos = createServer((_request, response) => response.writeHead(200, { 'content-type': 'image/png' }).end(png));
    await new Promise<void>((resolve) => photos.listen(0, '127.0.0.1', resolve));
    photoBase = `http://127.0.0.1:${(photos.address() as AddressInfo).port}`;
  });
  afterAll(() => photos?.close());

  const opened: TestApp[] = [];
  afterEach(async () => {
    for (const t of opened.splice(0).reverse()) await t.close();
  });

  async function jobApp(overrides: Parameters<typeof startTestApp>[0] = {}) {
    const segmenter = squareSegmenter();
    const t = await startTestApp({ urlAllowPrivate: true, rateLimit: 0, ...overrides }, { model: ModelService.ofSegmenter(segmenter) });
    opened.push(t);
    const [token] = await t.store.listUserTokens();
    return { t, segmenter, auth: await t.managedToken(), userTokenId: token.id };
  }
  const createJob = (t: TestApp, auth: string, payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/jobs', headers: { authorization: auth }, payload });
  const getJob = async (t: TestApp, auth: string, id: string) => (await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${id}`, headers: { authorization: auth } })).json();

  it('is delivered again after three 500s: the fourth attempt succeeds, signed, and the job shows the four', async () => {
    const { t, auth, userTokenId } = await jobApp();
    // The app's own sender would wait 10 s between attempts: this test's sender runs the same
    // store on a fast schedule, counted in the app's metrics.
    await t.app.ready();
    await t.app.jobs.webhooks.close();
    const { log, lines } = capturedLog();
    const sender = new WebhookSender({
      store: t.store,
      secrets: t.app.webhookSecrets,
      rules: webhookAddressRules(t.config),
      log,
      schedule: FAST,
      pollMs: 10,
      onOutcome: (outcome) => t.app.metrics?.countWebhookDelivery(outcome),
    });
    const secret = (await t.app.webhookSecrets.rotate(userTokenId))!;
    const { url, received } = await startReceiver([500, 500, 500, 204]);

    const made = await createJob(t, auth, { images: [{ image_url: `${photoBase}/a.png` }], webhook_url: url });
    expect(made.statusCode, made.body).toBe(202);
    const id = made.json().id as string;
    expect((await getJob(t, auth, id)).webhook).toEqual({ url, state: 'waiting', attempts: [], next_attempt_at: null });

    sender.start();
    try {
      await until(async () => (await getJob(t, auth, id)).webhook.state === 'delivered', 'the webhook to be delivered');
    } finally {
      await sender.close();
    }
    const job = await getJob(t, auth, id);
    expect(job.status).toBe('done');
    expect(job.webhook.attempts.map((a: { attempt: number; status: number }) => [a.attempt, a.status])).toEqual([
      [1, 500],
      [2, 500],
      [3, 500],
      [4, 204],
    ]);
    for (const attempt of job.webhook.attempts) {
      expect(attempt).not.toHaveProperty('error');
      expect(attempt.duration_ms).toEqual(expect.any(Number));
    }
    expect(job.webhook.next_attempt_at).toBeNull();

    expect(received).toHaveLength(4);
    const ids = new Set(received.map((r) => r.headers['webhook-id']));
    expect([...ids]).toEqual([`${id}:job.done`]);
    expect(received.map((r) => r.headers['cutout-webhook-attempt'])).toEqual(['1', '2', '3', '4']);
    for (const { headers, body } of received) {
      expect(headers['content-type']).toBe('application/json');
      expect(verifies(secret, headers, body)).toBe(true);
    }
    const payload = JSON.parse(received[3].body);
    const { items: _items, page: _page, per_page: _perPage, next_page: _next, webhook: _webhook, ...summary } = job;
    expect(payload).toEqual({ event: 'job.done', ...summary });

    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toContain('cutout_webhook_deliveries_total{outcome="retried"} 3');
    expect(metrics).toContain('cutout_webhook_deliveries_total{outcome="delivered"} 1');

    // Nothing secret in the sender's log: neither the secret, nor a signature, nor the URL (which carries the receiver's credential).
    const log_ = lines.join('');
    expect(lines.length).toBeGreaterThanOrEqual(4);
    expect(log_).toContain(id);
    expect(log_).not.toContain(secret);
    expect(log_).not.toContain(secret.slice(6));
    for (const { headers } of received) for (const signature of signaturesIn(headers['webhook-signature'])) expect(log_).not.toContain(signature);
    expect(log_).not.toContain('receiver-credential-123');
  });

  it('fires job.cancelled when the job is cancelled, through the app\'s own sender', async () => {
    const { t, segmenter, auth, userTokenId } = await jobApp();
    const secret = (await t.app.webhookSecrets.rotate(userTokenId))!;
    const { url, received } = await startReceiver([200]);
    segmenter.hold(0);
    try {
      const made = await createJob(t, auth, { images: [{ image_url: `${photoBase}/a.png` }, { image_url: `${photoBase}/b.png` }], webhook_url: url });
      expect(made.statusCode, made.body).toBe(202);
      const id = made.json().id as string;
      const cancelled = await t.app.inject({ method: 'DELETE', url: `/api/v1/jobs/${id}`, headers: { authorization: auth } });
      expect(cancelled.json().status).toBe('cancelled');
      await until(() => received.length > 0, 'the webhook');
      const payload = JSON.parse(received[0].body);
      expect(payload).toMatchObject({ event: 'job.cancelled', id, status: 'cancelled', webhook_url: url, counts: { total: 2 } });
      expect(payload).not.toHaveProperty('items');
      expect(received[0].headers['webhook-id']).toBe(`${id}:job.cancelled`);
      expect(verifies(secret, received[0].headers, received[0].body)).toBe(true);
      await until(async () => (await getJob(t, auth, id)).webhook.state === 'delivered', 'the delivery to be recorded');
      const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(metrics).toContain('cutout_webhook_deliveries_total{outcome="delivered"} 1');
    } finally {
      segmenter.release();
    }
  });

  it('is refused with 400 webhook_secret_missing while its token has no signing secret, JSON or upload, and no job is made; made once it has one', async () => {
    const { t, auth, userTokenId } = await jobApp();
    const { url, received } = await startReceiver([204]);
    const refused = await createJob(t, auth, { images: [{ image_url: `${photoBase}/a.png` }], webhook_url: url });
    expect(refused.statusCode).toBe(400);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.json()).toMatchObject({ code: 'webhook_secret_missing', status: 400 });
    // The answer says how to make one.
    expect(refused.json().detail).toContain('cutout webhook-secret --token');
    expect(refused.json().detail).toContain('dashboard');
    const form = multipartBody([
      { name: 'files', filename: 'a.png', contentType: 'image/png', data: await makePhoto('png', 40, 30) },
      { name: 'webhook_url', data: url },
    ]);
    const upload = await t.app.inject({ method: 'POST', url: '/api/v1/jobs/multipart', headers: { authorization: auth, 'content-type': form.contentType }, payload: form.body });
    expect([upload.statusCode, upload.json().code]).toEqual([400, 'webhook_secret_missing']);
    expect(await t.store.openJobLoad(userTokenId)).toEqual({ openJobs: 0, queuedItems: 0 });
    expect(existsSync(join(t.config.dataDir, 'jobs')) ? readdirSync(join(t.config.dataDir, 'jobs')) : []).toEqual([]);
    // Without a webhook_url the token needs none.
    expect((await createJob(t, auth, { images: [{ image_url: `${photoBase}/a.png` }] })).statusCode).toBe(202);

    const secret = (await t.app.webhookSecrets.rotate(userTokenId))!;
    const made = await createJob(t, auth, { images: [{ image_url: `${photoBase}/a.png` }], webhook_url: url });
    expect(made.statusCode, made.body).toBe(202);
    await until(() => received.length > 0, 'the webhook');
    expect(verifies(secret, received[0].headers, received[0].body)).toBe(true);
  });

  it('is refused at submission with 400 url_not_allowed for a private address, literal or resolved, and no job is made', async () => {
    const { t, auth, userTokenId } = await jobApp({ urlAllowPrivate: false });
    await t.app.webhookSecrets.rotate(userTokenId);
    for (const webhook_url of ['http://10.1.2.3/hook', 'http://[::1]:8080/hook', 'http://localhost:9/hook', 'https://169.254.169.254/latest']) {
      const refused = await createJob(t, auth, { images: [{ image_url: 'https://example.com/a.png' }], webhook_url });
      expect(refused.statusCode, webhook_url).toBe(400);
      expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(refused.json()).toMatchObject({ code: 'url_not_allowed', status: 400 });
      expect(refused.json().detail).toMatch(/^webhook_url: /);
    }
    const notHttp = await createJob(t, auth, { images: [{ image_url: 'https://example.com/a.png' }], webhook_url: 'ftp://example.com/x' });
    expect(notHttp.statusCode).toBe(400);
    expect(await t.store.openJobLoad(userTokenId)).toEqual({ openJobs: 0, queuedItems: 0 });
  });

  it('is refused the same way on an upload, whose images are then not kept', async () => {
    const { t, auth, userTokenId } = await jobApp({ urlAllowPrivate: false });
    await t.app.webhookSecrets.rotate(userTokenId);
    const png = await makePhoto('png', 40, 30);
    const form = multipartBody([
      { name: 'files', filename: 'a.png', contentType: 'image/png', data: png },
      { name: 'webhook_url', data: 'http://192.168.1.20/hook' },
    ]);
    const refused = await t.app.inject({ method: 'POST', url: '/api/v1/jobs/multipart', headers: { authorization: auth, 'content-type': form.contentType }, payload: form.body });
    expect([refused.statusCode, refused.json().code]).toEqual([400, 'url_not_allowed']);
    expect(await t.store.openJobLoad(userTokenId)).toEqual({ openJobs: 0, queuedItems: 0 });
    expect(existsSync(join(t.config.dataDir, 'jobs')) ? readdirSync(join(t.config.dataDir, 'jobs')) : []).toEqual([]);
  });

  it('is refused by the host lists too (CUTOUT_URL_ALLOW_HOSTS), even where private addresses are allowed', async () => {
    const { t, auth, userTokenId } = await jobApp({ urlAllowHosts: ['hooks.example.com'] });
    await t.app.webhookSecrets.rotate(userTokenId);
    const refused = await createJob(t, auth, { images: [{ image_url: 'https://hooks.example.com/a.png' }], webhook_url: 'http://127.0.0.1:9/hook' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ code: 'url_not_allowed', detail: 'webhook_url: host 127.0.0.1 is not on the allow list.' });
  });

  it('a job without one shows webhook null', async () => {
    const { t, auth } = await jobApp();
    const made = await createJob(t, auth, { images: [{ image_url: `${photoBase}/a.png` }] });
    expect((await getJob(t, auth, made.json().id)).webhook).toBeNull();
  });
});

describe.each(['CUTOUT_WEBHOOK_KEY', 'CUTOUT_WEBHOOK_KEY_PREVIOUS'])('%s', (variable) => {
  it('is read as 32 bytes, and a refused value is not echoed in the start-up error', async () => {
    const { loadConfig } = await import('../src/config.js');
    const key = randomBytes(32).toString('hex');
    const field = variable === 'CUTOUT_WEBHOOK_KEY' ? 'webhookKey' : 'webhookKeyPrevious';
    expect(loadConfig({ [variable]: key })[field]).toBe(key);
    expect(() => loadConfig({ [variable]: 'not-a-key-but-a-secret' })).toThrow(new RegExp(`^${variable}=\\(the value given\\) is not valid`));
    try {
      loadConfig({ [variable]: 'not-a-key-but-a-secret' });
    } catch (error) {
      expect((error as Error).message).not.toContain('not-a-key-but-a-secret');
    }
  });
});
