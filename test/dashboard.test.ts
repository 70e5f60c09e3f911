import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountService } from '../src/dashboard/account-service.js';
import { alphaAt, makePhoto } from './helpers/images.js';
import { startDashboardApp, type DashboardApp } from './browser/dashboard-app.js';
import { Browser } from './helpers/dashboard-browser.js';

const PASSWORD = 'correct horse battery';

const tokenIdIn = (body: string) => /<pre id="new-token-id"[^>]*>(cut_user_[A-Za-z0-9_-]{43})<\/pre>/.exec(body)?.[1];

describe('dashboard on a fresh installation', () => {
  let t: DashboardApp;
  let owner: Browser;

  beforeAll(async () => {
    t = await startDashboardApp();
    owner = new Browser(t);
  });
  afterAll(async () => t?.close());

  it('prints a setup code and sends every page to the setup page', async () => {
    expect(t.setupCode()).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    expect(t.logs.find((line) => line.setupCode)?.msg).toContain('/dashboard/setup');
    for (const url of ['/dashboard', '/dashboard/tokens', '/dashboard/sign-in']) {
      const response = await owner.request('GET', url);
      expect([response.statusCode, response.headers.location]).toEqual([303, '/dashboard/setup']);
    }
  });

  it('refuses a form without its CSRF token, and a wrong setup code', async () => {
    await owner.csrf('/dashboard/setup');
    const noCsrf = await owner.request('POST', '/dashboard/setup', { form: { setup_code: t.setupCode()!, email: 'a@example.com', password: PASSWORD, password_again: PASSWORD } });
    expect(noCsrf.statusCode).toBe(403);
    expect(noCsrf.body).toContain('This form has expired');
    // A token from another browser's cookie does not fit this one's.
    const other = new Browser(t);
    const foreign = await other.csrf('/dashboard/setup');
    const crossed = await owner.request('POST', '/dashboard/setup', { form: { _csrf: foreign, setup_code: t.setupCode()!, email: 'a@example.com', password: PASSWORD, password_again: PASSWORD } });
    expect(crossed.statusCode).toBe(403);

    const wrong = await owner.submit('/dashboard/setup', '/dashboard/setup', { setup_code: 'AAAA-BBBB-CCCC', email: 'a@example.com', password: PASSWORD, password_again: PASSWORD });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.body).toContain('not the setup code');
    const differ = await owner.submit('/dashboard/setup', '/dashboard/setup', { setup_code: t.setupCode()!, email: 'a@example.com', password: PASSWORD, password_again: `${PASSWORD}!` });
    expect(differ.statusCode).toBe(400);
    expect(differ.body).toContain('The two passwords differ');
    expect(await t.store.listAccounts()).toEqual([]);
  });

  it('creates the owner with the setup code, signs them in, and voids the code', async () => {
    const code = t.setupCode()!;
    const done = await owner.submit('/dashboard/setup', '/dashboard/setup', { setup_code: code.toLowerCase().replaceAll('-', ' '), email: 'Owner@Example.com', password: PASSWORD, password_again: PASSWORD });
    expect([done.statusCode, done.headers.location]).toEqual([303, '/dashboard/tokens']);
    const cookie = String(done.headers['set-cookie']);
    expect(cookie).toMatch(/cutout_session=[^;]+; Path=\/dashboard; Expires=[^;]+; HttpOnly; SameSite=Lax/);
    expect(cookie).not.toMatch(/Secure/);

    expect((await t.store.listAccounts()).map((a) => a.email)).toEqual(['owner@example.com']);
    const stored = await t.store.findAccountByEmail('owner@example.com');
    expect(stored?.passwordHash).toMatch(/^scrypt\$32768\$8\$3\$/);
    expect(JSON.stringify(t.logs)).not.toContain(PASSWORD);

    const again = await new Browser(t).request('GET', '/dashboard/setup');
    expect([again.statusCode, again.headers.location]).toEqual([303, '/dashboard/sign-in']);
    const reuse = await new Browser(t).submit('/dashboard/sign-in', '/dashboard/setup', { setup_code: code, email: 'b@example.com', password: PASSWORD, password_again: PASSWORD });
    expect(reuse.statusCode).toBe(303);
    expect(await t.store.listAccounts()).toHaveLength(1);
  });

  it('serves pages with a strict CSP, and assets from itself', async () => {
    const page = await owner.request('GET', '/dashboard/tokens');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.headers['cache-control']).toBe('no-store');
    const assets = [...page.body.matchAll(/(?:href|src)="(\/dashboard\/assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(assets).toHaveLength(2);
    for (const asset of assets) expect((await owner.request('GET', asset)).statusCode).toBe(200);
    expect(page.body).not.toMatch(/(?:href|src)="(?:https?:)?\/\//);
    // Pages, not API: none of them is in the OpenAPI description.
    const openapi = (await owner.request('GET', '/api/v1/openapi.json')).json() as { paths: Record<string, unknown> };
    expect(Object.keys(openapi.paths).filter((path) => path.startsWith('/dashboard'))).toEqual([]);
    expect(Object.keys(openapi.paths)).toContain('/api/v1/auth/token');
  });

  let tokenId: string;
  let managed: string;

  it('creates a user token: the Token ID once, then only its prefix', async () => {
    const created = await owner.submit('/dashboard/tokens', '/dashboard/tokens', { name: 'laptop', expires: '' });
    expect(created.statusCode).toBe(200);
    tokenId = tokenIdIn(created.body)!;
    expect(tokenId).toBeDefined();
    expect(created.body).toContain(`curl -s -X POST http://localhost:80/api/v1/auth/token -H &quot;token: ${tokenId}&quot;`);
    expect(created.headers['cache-control']).toBe('no-store');

    const listed = await owner.request('GET', '/dashboard/tokens');
    expect(listed.body).not.toContain(tokenId);
    expect(listed.body).toContain(`${tokenId.slice(0, 15)}…`);
    expect(listed.body).toMatch(/<span class="badge active">active<\/span>/);

    const taken = await owner.submit('/dashboard/tokens', '/dashboard/tokens', { name: 'laptop', expires: '' });
    expect(taken.statusCode).toBe(400);
    expect(taken.body).toContain('already named “laptop”');
    const past = await owner.submit('/dashboard/tokens', '/dashboard/tokens', { name: 'old', expires: '2001-01-01' });
    expect(past.body).toContain('must be in the future');
    const hostile = await owner.submit('/dashboard/tokens', '/dashboard/tokens', { name: '<img src=x onerror=alert(1)>', expires: '' });
    expect(hostile.body).toContain('Token ID of “&lt;img src=x onerror=alert(1)&gt;”');
    expect(hostile.body).not.toContain('<img src=x');
    const dated = await owner.submit('/dashboard/tokens', '/dashboard/tokens', { name: 'until-2099', expires: '2099-01-31' });
    expect(tokenIdIn(dated.body)).toBeDefined();
    expect((await t.tokens.listUserTokens()).find((token) => token.name === 'until-2099')?.expiresAt).toBe('2099-01-31T00:00:00.000Z');
  });

  it('the Token ID exchanges through the API, and removals are counted per token', async () => {
    const exchanged = await t.app.inject({ method: 'POST', url: '/api/v1/auth/token', headers: { token: tokenId } });
    expect(exchanged.statusCode).toBe(200);
    managed = exchanged.json().managed_token;
    const jpeg = await makePhoto('jpeg', 320, 240);
    const ok = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: managed }, payload: { image_base64: jpeg.toString('base64') } });
    expect(ok.statusCode).toBe(200);
    const refused = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: managed }, payload: { image_base64: Buffer.from('not an image').toString('base64') } });
    expect(refused.statusCode).toBe(415);

    const [usage] = await t.store.listDailyUsage((await t.store.listAccounts())[0].id, '2000-01-01');
    expect(usage).toMatchObject({ succeeded: 1, refused: 1, failed: 0 });
    expect(usage.megapixels).toBeCloseTo(0.0768, 4);

    const tokensPage = await owner.request('GET', '/dashboard/tokens');
    expect(tokensPage.body).toMatch(/data-token-name="laptop"[\s\S]*?<td data-label="Removals, 30 days" class="num">1<\/td>/);
    const usagePage = await owner.request('GET', '/dashboard/usage');
    expect(usagePage.statusCode).toBe(200);
    expect(usagePage.body).toContain('<div class="value" id="stat-removals">1</div>');
    expect(usagePage.body).toContain('<div class="value" id="stat-error-rate">50.0 %</div>');
    expect(usagePage.body).toContain('<svg class="chart"');
  });

  it('the background endpoints refuse a dashboard session', async () => {
    const cookie = [...owner.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const jpeg = await makePhoto('jpeg', 64, 48);
    const response = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { cookie }, payload: { image_base64: jpeg.toString('base64') } });
    expect([response.statusCode, response.json().code]).toEqual([401, 'missing_token']);
    const exchange = await t.app.inject({ method: 'POST', url: '/api/v1/auth/token', headers: { cookie } });
    expect([exchange.statusCode, exchange.json().code]).toEqual([401, 'missing_token']);
  });

  it('try-it runs the pipeline for a session with its CSRF token, and answers problems otherwise', async () => {
    const jpeg = await makePhoto('jpeg', 320, 240);
    const headers = { 'content-type': 'application/octet-stream' };
    const anonymous = await new Browser(t).request('POST', '/dashboard/try-it/remove', { headers, body: jpeg });
    expect([anonymous.statusCode, anonymous.json().code]).toEqual([401, 'missing_token']);
    const noCsrf = await owner.request('POST', '/dashboard/try-it/remove', { headers, body: jpeg });
    expect([noCsrf.statusCode, noCsrf.json().code]).toEqual([400, 'invalid_request']);

    const csrf = await owner.csrf('/dashboard/try-it');
    const ok = await owner.request('POST', '/dashboard/try-it/remove', { headers: { ...headers, 'x-csrf-token': csrf }, body: jpeg });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.headers['content-type']).toBe('image/png');
    expect(await sharp(ok.rawPayload).metadata()).toMatchObject({ width: 320, height: 240, channels: 4 });
    expect(await alphaAt(ok.rawPayload, 0.5, 0.5)).toBeGreaterThan(200);
    expect(await alphaAt(ok.rawPayload, 0.02, 0.02)).toBeLessThan(50);

    const bad = await owner.request('POST', '/dashboard/try-it/remove', { headers: { ...headers, 'x-csrf-token': csrf }, body: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>') });
    expect([bad.statusCode, bad.json().code]).toEqual([415, 'unsupported_image_format']);
    expect(bad.json().detail).toMatch(/SVG/);
    // Try-it is not a token's removal: the usage counted above is unchanged.
    const [usage] = await t.store.listDailyUsage((await t.store.listAccounts())[0].id, '2000-01-01');
    expect(usage).toMatchObject({ succeeded: 1, refused: 1 });
  });

  it('revokes after a confirmation page; the managed token is refused at once', async () => {
    const token = (await t.tokens.listUserTokens()).find((x) => x.name === 'laptop')!;
    const confirm = await owner.request('GET', `/dashboard/tokens/${token.id}/revoke`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain('Revoke “laptop”?');
    const revoked = await owner.submit(`/dashboard/tokens/${token.id}/revoke`, `/dashboard/tokens/${token.id}/revoke`, {});
    expect([revoked.statusCode, revoked.headers.location]).toEqual([303, `/dashboard/tokens?revoked=${token.id}`]);
    expect((await owner.request('GET', revoked.headers.location as string)).body).toContain('Revoked “laptop”');

    const jpeg = await makePhoto('jpeg', 64, 48);
    const refused = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: managed }, payload: { image_base64: jpeg.toString('base64') } });
    expect([refused.statusCode, refused.json().code]).toEqual([401, 'revoked_token']);
  });

  it("keeps one account's tokens from another", async () => {
    const accounts = new AccountService(t.store, { sessionTtl: 3600 });
    await accounts.createAccount('second@example.com', PASSWORD);
    const second = new Browser(t);
    const signedIn = await second.submit('/dashboard/sign-in', '/dashboard/sign-in', { email: 'second@example.com', password: PASSWORD });
    expect(signedIn.statusCode).toBe(303);
    const page = await second.request('GET', '/dashboard/tokens');
    expect(page.body).toContain('No tokens yet');
    const target = (await t.tokens.listUserTokens()).find((x) => x.name === 'until-2099')!;
    expect((await second.request('GET', `/dashboard/tokens/${target.id}/revoke`)).statusCode).toBe(303);
    await second.submit('/dashboard/tokens', `/dashboard/tokens/${target.id}/revoke`, {});
    expect((await t.tokens.listUserTokens()).find((x) => x.id === target.id)?.revokedAt).toBeNull();
  });

  it('signs out: the session cookie no longer works, even replayed', async () => {
    const replay = new Map(owner.cookies);
    const out = await owner.submit('/dashboard/tokens', '/dashboard/sign-out', {});
    expect([out.statusCode, out.headers.location]).toEqual([303, '/dashboard/sign-in?signed-out']);
    expect(owner.cookies.has('cutout_session')).toBe(false);
    const replayed = new Browser(t);
    for (const [name, value] of replay) replayed.cookies.set(name, value);
    const page = await replayed.request('GET', '/dashboard/tokens');
    expect([page.statusCode, page.headers.location]).toEqual([303, '/dashboard/sign-in']);
  });

  it('throttles failed sign-ins per account, even when the password is then right', async () => {
    const guesser = new Browser(t);
    for (let i = 0; i < 5; i++) {
      const wrong = await guesser.submit('/dashboard/sign-in', '/dashboard/sign-in', { email: 'owner@example.com', password: `guess ${i} wrong` });
      expect(wrong.statusCode).toBe(401);
      expect(wrong.body).toContain('The email or the password is wrong.');
    }
    const blocked = await new Browser(t).submit('/dashboard/sign-in', '/dashboard/sign-in', { email: 'OWNER@example.com', password: PASSWORD });
    expect(blocked.statusCode).toBe(429);
    expect(blocked.body).toContain('Too many failed sign-ins');
  });

  it('throttles failed sign-ins per address, across accounts', async () => {
    const guesser = new Browser(t);
    // 14 more failures from this address (one wrong setup code and 5 sign-ins came before): 20 in all.
    for (let i = 0; i < 14; i++) {
      const wrong = await guesser.submit('/dashboard/sign-in', '/dashboard/sign-in', { email: `nobody${i}@example.com`, password: 'wrong password' });
      expect(wrong.statusCode).toBe(401);
    }
    const blocked = await guesser.submit('/dashboard/sign-in', '/dashboard/sign-in', { email: 'second@example.com', password: PASSWORD });
    expect(blocked.statusCode).toBe(429);
  });
});

describe('dashboard with CUTOUT_OWNER_EMAIL', () => {
  it('creates the owner at start, prints no setup code, and gives it the tokens made before', async () => {
    const first = await startDashboardApp();
    const dataDir = first.config.dataDir;
    const before = await first.tokens.createUserToken('made-by-cli');
    await first.app.close();
    await first.store.close();

    const t = await startDashboardApp({ dataDir, ownerEmail: 'boss@example.com', ownerPassword: PASSWORD, trustProxy: true });
    try {
      expect(t.setupCode()).toBeUndefined();
      const [account] = await t.store.listAccounts();
      expect(account.email).toBe('boss@example.com');
      expect((await t.tokens.listUserTokens(account.id)).map((x) => x.id)).toEqual([before.token.id]);

      // Behind an https proxy the cookies are Secure.
      const browser = new Browser(t);
      const csrf = await browser.csrf('/dashboard/sign-in');
      const signedIn = await browser.request('POST', '/dashboard/sign-in', { headers: { 'x-forwarded-proto': 'https' }, form: { _csrf: csrf, email: 'boss@example.com', password: PASSWORD } });
      expect(signedIn.statusCode).toBe(303);
      expect(String(signedIn.headers['set-cookie'])).toMatch(/cutout_session=[^;]+;.*HttpOnly; Secure; SameSite=Lax/);
      expect(JSON.stringify(t.logs)).not.toContain(PASSWORD);
    } finally {
      await t.close();
      const { rm } = await import('node:fs/promises');
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('stops at start when the owner password is too short, naming the variable', async () => {
    await expect(startDashboardApp({ ownerEmail: 'boss@example.com', ownerPassword: 'short' })).rejects.toThrow(/CUTOUT_OWNER_PASSWORD.*at least 10 characters/);
    await expect(startDashboardApp({ ownerEmail: 'boss@example.com' })).rejects.toThrow(/CUTOUT_OWNER_EMAIL and CUTOUT_OWNER_PASSWORD go together/);
  });
});
