import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenService } from '../src/auth/token-service.js';
import { AccountService } from '../src/dashboard/account-service.js';
import { WEBHOOK_KEY_FILE } from '../src/auth/webhook-key.js';
import { WebhookSecrets } from '../src/auth/webhook-secrets.js';
import { deriveSigningSecret } from '../src/auth/webhook-signature.js';
import { ModelService } from '../src/model/model-service.js';
import { openSqliteStore } from '../src/store/sqlite-store.js';
import { startDashboardApp, type DashboardApp } from './browser/dashboard-app.js';
import { runCli } from './helpers/cli.js';
import { Browser } from './helpers/dashboard-browser.js';
import { fakeSegmenter } from './helpers/fake-segmenter.js';

/**
 * A user token's webhook signing secret, made in the dashboard's Tokens page and by
 * `cutout webhook-secret`: shown once, stored nowhere, the one the sender signs with.
 */

const EMAIL = 'owner@example.com';
const PASSWORD = 'correct horse battery';
const secretIn = (body: string) => /<pre id="new-signing-secret"[^>]*>(whsec_[A-Za-z0-9+/]{43}=)<\/pre>/.exec(body)?.[1];

describe('the Tokens page', () => {
  let t: DashboardApp;
  let accountId: string;

  beforeAll(async () => {
    t = await startDashboardApp({}, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    ({ id: accountId } = await new AccountService(t.store, { sessionTtl: 3600 }).createAccount(EMAIL, PASSWORD));
  });
  afterAll(async () => t?.close());

  const signedIn = async (email = EMAIL) => {
    const browser = new Browser(t);
    const answer = await browser.submit('/dashboard/sign-in', '/dashboard/sign-in', { email, password: PASSWORD });
    expect(answer.statusCode).toBe(303);
    return browser;
  };

  it('makes the secret after a confirmation, with the form\'s CSRF token only, and shows it once', async () => {
    const { token } = await t.tokens.createUserToken('shop backend', null, accountId);
    const owner = await signedIn();
    const list = await owner.request('GET', '/dashboard/tokens');
    expect(list.body).toContain(`href="/dashboard/tokens/${token.id}/webhook-secret"`);
    const action = `/dashboard/tokens/${token.id}/webhook-secret`;
    const confirm = await owner.request('GET', action);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain('This token has none yet.');
    expect(confirm.body).not.toContain('name="end_earlier"');

    const refused = await owner.request('POST', action, { form: {} });
    expect(refused.statusCode).toBe(403);
    expect(secretIn(refused.body)).toBeUndefined();
    const foreign = await owner.request('POST', action, { form: { _csrf: await (await signedIn()).csrf(action) } });
    expect(foreign.statusCode).toBe(403);

    const made = await owner.submit(action, action, {});
    expect(made.statusCode).toBe(200);
    expect(made.headers['cache-control']).toBe('no-store');
    const secret = secretIn(made.body);
    // Generation 1: the refused posts made none.
    expect(secret).toBe(await t.app.webhookSecrets.secretOf(token.id, 1));
    expect((await owner.request('GET', '/dashboard/tokens')).body).not.toContain(secret!);
    expect(JSON.stringify(t.logs)).not.toContain(secret!.slice(6));

    expect(made.body).toContain('and with no earlier one');

    // A second one: the first goes on signing beside it for a day, unless the owner ends it.
    const replacing = await owner.request('GET', action);
    expect(replacing.body).toContain('This token has a secret.');
    expect(replacing.body).toContain('goes on signing beside it for 24 hours');
    expect(replacing.body).toContain('name="end_earlier"');
    const second = await owner.submit(action, action, {});
    const again = secretIn(second.body);
    expect(again).not.toBe(secret);
    expect(again).toBe(await t.app.webhookSecrets.secretOf(token.id, 2));
    const until = (await t.store.findSigningGenerations(token.id, new Date().toISOString()))[1].signsUntil!;
    expect(Date.parse(until) - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    expect(second.body).toContain(`and with the secret it replaced too until <time datetime="${until}"`);
    expect((await owner.request('GET', action)).body).toContain('This token has a secret (and 1 replaced one still signing).');

    // One leaked: the third ends both earlier ones at once.
    const third = await owner.submit(action, action, { end_earlier: 'true' });
    expect(secretIn(third.body)).toBe(await t.app.webhookSecrets.secretOf(token.id, 3));
    expect(third.body).toContain('and with no earlier one');
    expect(await t.store.findSigningGenerations(token.id, new Date().toISOString())).toEqual([{ generation: 3, signsUntil: null }]);
  });

  it("makes none for another account's token, nor for a revoked one", async () => {
    const { token } = await t.tokens.createUserToken('theirs', null, accountId);
    await new AccountService(t.store, { sessionTtl: 3600 }).createAccount('second@example.com', PASSWORD);
    const stranger = await signedIn('second@example.com');
    const action = `/dashboard/tokens/${token.id}/webhook-secret`;
    expect((await stranger.request('GET', action)).statusCode).toBe(303);
    const tried = await stranger.submit('/dashboard/tokens', action, {});
    expect([tried.statusCode, tried.headers.location]).toEqual([303, '/dashboard/tokens']);
    await t.tokens.revokeUserToken(token.id);
    const owner = await signedIn();
    expect((await owner.submit('/dashboard/tokens', action, {})).statusCode).toBe(303);
    // Neither made a generation: the first secret made now is generation 1.
    expect(await t.app.webhookSecrets.rotate(token.id)).toBe(await t.app.webhookSecrets.secretOf(token.id, 1));
  });
});

describe('cutout webhook-secret', () => {
  let dataDir: string;
  let tokenId: string;
  let userTokenId: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cutout-webhook-cli-'));
    const store = await openSqliteStore(dataDir);
    const created = await new TokenService(store, { managedTokenTtl: 3600 }).createUserToken('shop');
    ({ tokenId } = created);
    userTokenId = created.token.id;
    await store.close();
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it('prints the secret once, on its last line: the one the server derives from the key file of the data directory', async () => {
    const run = await runCli(['webhook-secret', '--token', 'shop'], { env: { CUTOUT_DATA_DIR: dataDir } });
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n');
    const secret = lines.at(-1)!;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(run.stdout.split(secret)).toHaveLength(2);
    expect((await stat(join(dataDir, WEBHOOK_KEY_FILE))).mode & 0o777).toBe(0o600);
    const store = await openSqliteStore(dataDir);
    try {
      expect(await new WebhookSecrets(store, { dataDir }).secretOf(userTokenId, 1)).toBe(secret);
    } finally {
      await store.close();
    }
    // By Token ID, a second time: a new generation, a new secret, the first one signing beside it for its overlap.
    const second = await runCli(['webhook-secret', '--token', tokenId], { env: { CUTOUT_DATA_DIR: dataDir } });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout.trim().split('\n').at(-1)).not.toBe(secret);
    const again = await openSqliteStore(dataDir);
    try {
      expect((await again.findSigningGenerations(userTokenId, new Date().toISOString())).map((signing) => signing.generation)).toEqual([2, 1]);
    } finally {
      await again.close();
    }
    // A leaked secret: --end-earlier leaves the new one signing alone, at once.
    const ended = await runCli(['webhook-secret', '--token', 'shop', '--end-earlier'], { env: { CUTOUT_DATA_DIR: dataDir } });
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stdout).toContain('the earlier ones no longer sign');
    const last = await openSqliteStore(dataDir);
    try {
      expect((await last.findSigningGenerations(userTokenId, new Date().toISOString())).map((signing) => signing.generation)).toEqual([3]);
    } finally {
      await last.close();
    }
  });

  it('derives from CUTOUT_WEBHOOK_KEY when it is set, and refuses an unknown token with a usage error', async () => {
    const key = randomBytes(32);
    const run = await runCli(['webhook-secret', '--token', 'shop'], { env: { CUTOUT_DATA_DIR: dataDir, CUTOUT_WEBHOOK_KEY: key.toString('hex') } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n').at(-1)).toBe(deriveSigningSecret(key, userTokenId, 4));
    const unknown = await runCli(['webhook-secret', '--token', 'nobody'], { env: { CUTOUT_DATA_DIR: dataDir } });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('cutout: no user token matches "nobody"');
    const bare = await runCli(['webhook-secret'], { env: { CUTOUT_DATA_DIR: dataDir } });
    expect([bare.code, bare.stderr.split('\n')[0]]).toEqual([2, 'cutout: webhook-secret needs --token TOKEN_ID_OR_NAME']);
  });
});
