import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
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
 * process: Cutout's sender delivers a cancelled job's webhook to each, and each refuses what
 * is not signed with its secret, a body changed after signing, and an old timestamp.
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

describe('examples/webhooks/', () => {
  let dataDir: string;
  let store: Store;
  let secrets: WebhookSecrets;
  let userTokenId: string;
  let secret: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cutout-webhook-examples-'));
    store = await openSqliteStore(dataDir);
    userTokenId = randomUUID();
    await store.createUserToken({ id: userTokenId, name: 'shop', tokenHash: randomBytes(32).toString('hex'), prefix: 'cut_user_x', createdAt: new Date().toISOString(), expiresAt: null });
    secrets = new WebhookSecrets(store, { dataDir });
    secret = (await secrets.rotate(userTokenId))!;
  });
  afterAll(async () => {
    await store?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  for (const receiver of RECEIVERS) {
    describe(receiver.name, () => {
      let running: Running;
      beforeAll(async () => {
        running = await startReceiver(receiver.command, secret);
      });
      afterAll(() => {
        running?.child.kill();
      });

      it("accepts Cutout's delivery, signed with the token's secret, and acts on it once", async () => {
        const jobId = `job_${randomBytes(16).toString('base64url')}`;
        await store.createJob(
          { id: jobId, userTokenId, options: {}, createdAt: new Date().toISOString(), webhookUrl: running.url, idempotencyKey: null, bodyHash: null },
          [{ imageUrl: 'https://example.com/a.jpg', clientId: null }],
        );
        await store.cancelJob(jobId, new Date().toISOString());
        const sender = new WebhookSender({ store, secrets, rules: { policy: addressPolicy(true), allowHosts: [], denyHosts: [] }, log: pino({ level: 'silent' }) });
        expect(await sender.deliverDue()).toBe(1);
        expect(await store.findWebhookDelivery(jobId)).toMatchObject({ state: 'delivered', attempts: [{ attempt: 1, status: 204, error: null }] });
        expect(await printed(running, jobId)).toContain(`job.cancelled ${jobId}: 0 succeeded, 0 failed; results at /api/v1/jobs/${jobId}/results`);

        // The same delivery again (a retry whose first answer was lost): 2xx, not acted on twice.
        const body = JSON.stringify({ event: 'job.cancelled', id: jobId, counts: { succeeded: 0, failed: 0 }, results_url: 'x' });
        const again = await post(running.url, body, { 'cutout-signature': signWebhook(secret, Math.floor(Date.now() / 1000), body), 'cutout-webhook-id': `${jobId}:job.cancelled` });
        expect(again.status).toBe(200);
        const marker = `job_${randomUUID()}`;
        const later = JSON.stringify({ event: 'job.done', id: marker, counts: { succeeded: 1, failed: 0 }, results_url: 'x' });
        await post(running.url, later, { 'cutout-signature': signWebhook(secret, Math.floor(Date.now() / 1000), later), 'cutout-webhook-id': `${marker}:job.done` });
        expect((await printed(running, marker)).split(`job.cancelled ${jobId}`)).toHaveLength(2);
      });

      it('refuses a changed body, another secret, an old timestamp and no signature, with 401', async () => {
        const now = Math.floor(Date.now() / 1000);
        const body = JSON.stringify({ event: 'job.done', id: 'job_forged', counts: { succeeded: 1, failed: 0 }, results_url: 'x' });
        const headers = (signature: string) => ({ 'cutout-signature': signature, 'cutout-webhook-id': `job_${randomUUID()}:job.done` });
        const good = await post(running.url, body, headers(signWebhook(secret, now, body)));
        expect(good.status).toBe(204);
        const changed = await post(running.url, body.replace('"succeeded":1', '"succeeded":9'), headers(signWebhook(secret, now, body)));
        expect(changed.status).toBe(401);
        const otherSecret = await post(running.url, body, headers(signWebhook(await secrets.secretOf(userTokenId, 99), now, body)));
        expect(otherSecret.status).toBe(401);
        const old = await post(running.url, body, headers(signWebhook(secret, now - 6 * 60, body)));
        expect(old.status).toBe(401);
        const unsigned = await post(running.url, body, { 'cutout-webhook-id': 'job_x:job.done' });
        expect(unsigned.status).toBe(401);
        const garbled = await post(running.url, body, headers('t=abc,v1=zz\u00e9'));
        expect(garbled.status).toBe(401);
      });
    });
  }
});
