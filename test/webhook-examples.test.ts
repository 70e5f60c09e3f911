import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressPolicy } from '../src/fetch/address-policy.js';
import { WebhookSecrets } from '../src/auth/webhook-secrets.js';
import { WebhookSender } from '../src/jobs/webhook-sender.js';
import { signWebhook } from '../src/auth/webhook-signature.js';
import { openSqliteStore } from '../src/store/sqlite-store.js';
import type { Store } from '../src/store/store.js';

/**
 * The webhook receivers in examples/webhooks/ run as a user would run them, each as its own
 * process: Cutout's sender delivers a cancelled job's webhook to each, signed during a rotation
 * with the secret each was given and the one that replaced it; each refuses what is not signed
 * with its secret, a real delivery whose body was changed, and a timestamp 6 minutes away.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const RECEIVERS = [
  { name: 'Node', command: [process.execPath, 'examples/webhooks/receiver.mjs'] },
  { name: 'Python', command: [PYTHON, 'examples/webhooks/receiver.py'] },
] as const;

interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/** Starts a receiver on a free port and waits for the line that names its address. */
function startReceiver(command: readonly string[], secret: string): Promise<Running> {
  const child = spawn(command[0], command.slice(1), { cwd: ROOT, env: { ...process.env, CUTOUT_WEBHOOK_SECRET: secret, PORT: '0', HOST: '127.0.0.1' } });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no address from ${command.join(' ')}: ${output}`)), 15_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve({ child, url: `${url}/cutout`, output: () => output });
      }
    });
    child.on('exit', (code) => reject(new Error(`${command.join(' ')} exited with ${code}: ${output}`)));
  });
}

/** Waits for the receiver's output to hold `text`: its stdout arrives after its answer. */
async function printed(running: Running, text: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  while (!running.output().includes(text) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return running.output();
}

const post = (url: string, body: string, headers: Record<string, string>) => fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

/** Standard Webhooks headers for `body`, signed with each of `secrets` at `sentAt`, as Cutout's sender makes them. */
const signed = (secrets: string[], body: string, sentAt = new Date(), id = `job_${randomUUID()}:job.done`) => ({
  'webhook-id': id,
  'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
  'webhook-signature': signWebhook(secrets, id, sentAt, body),
});

/** A receiver on loopback that keeps what it is sent, to replay a real delivery's exact headers. */
async function startRecorder() {
  const received: { headers: Record<string, string>; body: string }[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      received.push({ headers: request.headers as Record<string, string>, body });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
}

describe('examples/webhooks/', () => {
  let dataDir: string;
  let store: Store;
  let secrets: WebhookSecrets;
  let sender: WebhookSender;
  let userTokenId: string;
  /** The secret the receivers were given, replaced since: Cutout signs with it and the new one for a day. */
  let replaced: string;
  let current: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cutout-webhook-examples-'));
    store = await openSqliteStore(dataDir);
    userTokenId = randomUUID();
    await store.createUserToken({ id: userTokenId, name: 'shop', tokenHash: randomBytes(32).toString('hex'), prefix: 'cut_user_x', createdAt: new Date().toISOString(), expiresAt: null });
    secrets = new WebhookSecrets(store, { dataDir });
    replaced = (await secrets.rotate(userTokenId))!;
    current = (await secrets.rotate(userTokenId))!;
    sender = new WebhookSender({ store, secrets, rules: { policy: addressPolicy(true), allowHosts: [], denyHosts: [] }, log: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await store?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** Ends a new job with a webhook to `url` and has Cutout's sender deliver it; the job's id. */
  async function deliverJob(url: string): Promise<string> {
    const jobId = `job_${randomBytes(16).toString('base64url')}`;
    await store.createJob(
      { id: jobId, userTokenId, options: {}, createdAt: new Date().toISOString(), webhookUrl: url, idempotencyKey: null, bodyHash: null },
      [{ imageUrl: 'https://example.com/a.jpg', clientId: null }],
      { maxOpenJobs: 100, maxQueuedItems: 10_000 },
    );
    await store.cancelJob(jobId, new Date().toISOString());
    expect(await sender.deliverDue()).toBe(1);
    return jobId;
  }

  for (const receiver of RECEIVERS) {
    describe(receiver.name, () => {
      let running: Running;
      beforeAll(async () => {
        running = await startReceiver(receiver.command, replaced);
      });
      afterAll(() => {
        running?.child.kill();
      });

      it("accepts Cutout's delivery during a rotation with the secret it has (the replaced one), and acts on it once", async () => {
        const jobId = await deliverJob(running.url);
        expect(await store.findWebhookDelivery(jobId)).toMatchObject({ state: 'delivered', attempts: [{ attempt: 1, status: 204, error: null }] });
        expect(await printed(running, jobId)).toContain(`job.cancelled ${jobId}: 0 succeeded, 0 failed; results at /api/v1/jobs/${jobId}/results`);
      });

      it("refuses a real delivery whose body was changed, and acts once on the same delivery sent twice", async () => {
        const recorder = await startRecorder();
        try {
          const jobId = await deliverJob(recorder.url);
          const [{ headers, body }] = recorder.received;
          const forwarded = { 'webhook-id': headers['webhook-id'], 'webhook-timestamp': headers['webhook-timestamp'], 'webhook-signature': headers['webhook-signature'] };
          expect(forwarded['webhook-signature'].split(' ')).toHaveLength(2);
          const tampered = await post(running.url, body.replace('"cancelled":1', '"cancelled":0'), forwarded);
          expect(body).toContain('"cancelled":1');
          expect(tampered.status).toBe(401);
          expect((await post(running.url, body, forwarded)).status).toBe(204);
          // The same delivery again (a retry whose first answer was lost): 2xx, not acted on twice.
          expect((await post(running.url, body, forwarded)).status).toBe(200);
          const marker = `job_${randomUUID()}`;
          const later = JSON.stringify({ event: 'job.done', id: marker, counts: { succeeded: 1, failed: 0 }, results_url: 'x' });
          expect((await post(running.url, later, signed([current], later))).status).toBe(401);
          expect((await post(running.url, later, signed([current, replaced], later))).status).toBe(204);
          expect((await printed(running, marker)).split(`job.cancelled ${jobId}`)).toHaveLength(2);
        } finally {
          recorder.server.close();
        }
      });

      it('refuses another secret, an old or future timestamp, another id, no signature and garbage, with 401', async () => {
        const body = JSON.stringify({ event: 'job.done', id: 'job_forged', counts: { succeeded: 1, failed: 0 }, results_url: 'x' });
        expect((await post(running.url, body, signed([replaced], body))).status).toBe(204);
        // Any one of several signatures will do, wherever it is in the list.
        expect((await post(running.url, body, signed([current, await secrets.secretOf(userTokenId, 99), replaced], body))).status).toBe(204);
        expect((await post(running.url, body, signed([await secrets.secretOf(userTokenId, 99)], body))).status).toBe(401);
        expect((await post(running.url, body, signed([replaced], body, new Date(Date.now() - 6 * 60_000)))).status).toBe(401);
        expect((await post(running.url, body, signed([replaced], body, new Date(Date.now() + 6 * 60_000)))).status).toBe(401);
        const good = signed([replaced], body);
        expect((await post(running.url, body, { ...good, 'webhook-id': `${good['webhook-id']}x` })).status).toBe(401);
        expect((await post(running.url, body, { ...good, 'webhook-signature': good['webhook-signature'].replace('v1,', 'v2,') })).status).toBe(401);
        const { 'webhook-signature': _signature, ...unsigned } = good;
        expect((await post(running.url, body, unsigned)).status).toBe(401);
        expect((await post(running.url, body, { ...good, 'webhook-timestamp': 'abc', 'webhook-signature': 'v1,zz\u00e9' })).status).toBe(401);
        // A superscript digit: a digit to Python's isdigit, not a time.
        expect((await post(running.url, body, { ...good, 'webhook-timestamp': '\u00b2' })).status).toBe(401);
      });
    });
  }
});
