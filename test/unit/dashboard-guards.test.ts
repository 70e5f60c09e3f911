import { randomBytes, randomUUID, scryptSync } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import cookie from '@fastify/cookie';
import Fastify from 'fastify';
import { AccountService } from '../../src/dashboard/account-service.js';
import { sessionPlugin } from '../../src/dashboard/session.js';
import { ModelService } from '../../src/model/model-service.js';
import { startDashboardApp, type DashboardApp } from '../browser/dashboard-app.js';
import { fakeSegmenter } from '../helpers/fake-segmenter.js';

// The dashboard's session cookie and CSRF guards through its real routes, with a stand-in
// model so that each test builds its own app quickly (the page tests in dashboard.test.ts
// load the real model). Apps are built inside the tests, not in beforeAll, so that mutation
// testing can tell which test reaches which line.

const EMAIL = 'owner@example.com';
const PASSWORD = 'a long enough password';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

let t: DashboardApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function start(overrides: Parameters<typeof startDashboardApp>[0] = {}): Promise<DashboardApp> {
  t = await startDashboardApp(overrides, { model: ModelService.ofSegmenter(fakeSegmenter()) });
  return t;
}

/**
 * The owner's password hashed in the stored format, at a far lower scrypt cost than a new
 * account gets: verifying reads the cost from the hash, and these tests are about the guards.
 */
function cheapPasswordHash(password: string): string {
  const salt = randomBytes(16);
  const key = scryptSync(password.normalize('NFC'), salt, 32, { N: 1024, r: 8, p: 1 });
  return ['scrypt', 1024, 8, 1, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** A started app with one account; returns the secret of a live session of it. */
async function withAccount(overrides: Parameters<typeof startDashboardApp>[0] = {}): Promise<{ app: DashboardApp; secret: string }> {
  const app = await start(overrides);
  const account = await app.store.createAccount({ id: randomUUID(), email: EMAIL, passwordHash: cheapPasswordHash(PASSWORD), createdAt: new Date().toISOString() });
  const { secret } = await new AccountService(app.store, { sessionTtl: app.config.sessionTtl }).startSession(account.id);
  return { app, secret };
}

type Injected = Awaited<ReturnType<DashboardApp['app']['inject']>>;

const cookieOf = (response: Injected, name: string) => response.cookies.find((cookie) => cookie.name === name);

/** The CSRF token a page carries: its meta tag, which every hidden form field on it repeats. */
function csrfOf(response: Injected): string {
  const meta = /<meta name="csrf-token" content="([^"]+)">/.exec(response.body)?.[1];
  expect(meta).toBeDefined();
  for (const [, field] of response.body.matchAll(/<input type="hidden" name="_csrf" value="([^"]+)">/g)) expect(field).toBe(meta);
  return meta!;
}

const form = (fields: Record<string, string | string[]>) =>
  Object.entries(fields)
    .flatMap(([name, value]) => (Array.isArray(value) ? value : [value]).map((v) => `${name}=${encodeURIComponent(v)}`))
    .join('&');

describe('the pre-session CSRF token', () => {
  it('comes with a cookie for /dashboard only, HttpOnly and SameSite=Lax, and is not the cookie itself', async () => {
    const { app } = await start();
    const page = await app.inject({ url: '/dashboard/setup' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    const cookie = cookieOf(page, 'cutout_presession');
    expect(cookie).toMatchObject({ path: '/dashboard', httpOnly: true, sameSite: 'Lax' });
    expect(cookie!.secure).toBeFalsy();
    expect(cookie!.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const token = csrfOf(page);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(token).not.toBe(cookie!.value);
  });

  it('is Secure behind https', async () => {
    const { app } = await start({ trustProxy: true });
    const page = await app.inject({ url: '/dashboard/setup', headers: { 'x-forwarded-proto': 'https' } });
    expect(cookieOf(page, 'cutout_presession')).toMatchObject({ secure: true, path: '/dashboard', httpOnly: true });
  });

  it('follows the cookie: the same cookie gives the same token and no new cookie, another cookie another token', async () => {
    const { app } = await start();
    const seed = 's'.repeat(100);
    const first = await app.inject({ url: '/dashboard/setup', cookies: { cutout_presession: seed } });
    const again = await app.inject({ url: '/dashboard/setup', cookies: { cutout_presession: seed } });
    const other = await app.inject({ url: '/dashboard/setup', cookies: { cutout_presession: 'o'.repeat(100) } });
    expect(cookieOf(first, 'cutout_presession')).toBeUndefined();
    expect(csrfOf(again)).toBe(csrfOf(first));
    expect(csrfOf(other)).not.toBe(csrfOf(first));
  });

  it('is not bound to a session cookie that names no live session', async () => {
    const { app } = await withAccount();
    const seed = 's'.repeat(43);
    const alone = await app.app.inject({ url: '/dashboard/sign-in', cookies: { cutout_presession: seed } });
    const withBogus = await app.app.inject({ url: '/dashboard/sign-in', cookies: { cutout_presession: seed, cutout_session: 'b'.repeat(43) } });
    expect(withBogus.statusCode).toBe(200);
    expect(csrfOf(withBogus)).toBe(csrfOf(alone));
  });

  it('replaces a cookie longer than 100 characters or empty', async () => {
    const { app } = await start();
    for (const seed of ['s'.repeat(101), '']) {
      const page = await app.inject({ url: '/dashboard/setup', cookies: { cutout_presession: seed } });
      const cookie = cookieOf(page, 'cutout_presession');
      expect(cookie?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
      // The token on the page is the new cookie's.
      const next = await app.inject({ url: '/dashboard/setup', cookies: { cutout_presession: cookie!.value } });
      expect(csrfOf(next)).toBe(csrfOf(page));
    }
  });
});

describe('a form post', () => {
  /** A pre-session cookie and its token, from the sign-in page. */
  async function signInPage(app: DashboardApp) {
    const page = await app.app.inject({ url: '/dashboard/sign-in' });
    expect(page.statusCode).toBe(200);
    return { cookie: cookieOf(page, 'cutout_presession')!.value, token: csrfOf(page) };
  }
  const signIn = (app: DashboardApp, cookie: string | undefined, fields: Record<string, string | string[]>) =>
    app.app.inject({ method: 'POST', url: '/dashboard/sign-in', headers: FORM, cookies: cookie === undefined ? {} : { cutout_presession: cookie }, payload: form(fields) });

  it('with its page token passes the guard', async () => {
    const { app } = await withAccount();
    const { cookie, token } = await signInPage(app);
    const wrongPassword = await signIn(app, cookie, { _csrf: token, email: EMAIL, password: 'not the password' });
    expect(wrongPassword.statusCode).toBe(401);
    const right = await signIn(app, cookie, { _csrf: token, email: EMAIL, password: PASSWORD });
    expect(right.statusCode).toBe(303);
    expect(right.headers.location).toBe('/dashboard/tokens');
  });

  it('without it, with another, or with no cookie, gets the 403 page that says the form expired', async () => {
    const { app } = await withAccount();
    const { cookie, token } = await signInPage(app);
    const other = await signInPage(app);
    const changed = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    const refused = [
      await signIn(app, cookie, { email: EMAIL, password: PASSWORD }),
      await signIn(app, cookie, { _csrf: '', email: EMAIL, password: PASSWORD }),
      await signIn(app, cookie, { _csrf: changed, email: EMAIL, password: PASSWORD }),
      await signIn(app, cookie, { _csrf: token.slice(1), email: EMAIL, password: PASSWORD }),
      await signIn(app, cookie, { _csrf: other.token, email: EMAIL, password: PASSWORD }),
      await signIn(app, cookie, { _csrf: [token, token], email: EMAIL, password: PASSWORD }),
      await signIn(app, undefined, { _csrf: token, email: EMAIL, password: PASSWORD }),
      await signIn(app, '', { _csrf: token, email: EMAIL, password: PASSWORD }),
    ];
    for (const response of refused) {
      expect(response.statusCode).toBe(403);
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.body).toContain('<h1>This form has expired</h1>');
      expect(response.body).toContain('<title>Form expired · Cutout</title>');
      expect(cookieOf(response, 'cutout_session')).toBeUndefined();
    }
    // The refusal page carries a token that works for the cookie it was sent with.
    expect(csrfOf(refused[0])).toBe(token);
    expect(app.logs.filter((line) => line.msg === 'dashboard form refused: CSRF token missing or wrong')).toHaveLength(refused.length);
  });

  it('does not take the token from a header, only from the form', async () => {
    const { app } = await withAccount();
    const { cookie, token } = await signInPage(app);
    const response = await app.app.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { ...FORM, 'x-csrf-token': token },
      cookies: { cutout_presession: cookie },
      payload: form({ _csrf: 'x', email: EMAIL, password: PASSWORD }),
    });
    expect(response.statusCode).toBe(403);
  });

  it('with the token in x-csrf-token and no body at all reads every field as empty', async () => {
    const { app } = await withAccount();
    const { cookie, token } = await signInPage(app);
    const response = await app.app.inject({ method: 'POST', url: '/dashboard/sign-in', headers: { 'x-csrf-token': token }, cookies: { cutout_presession: cookie } });
    expect(response.statusCode).toBe(401);
    expect(response.body).toContain('name="email" required autocomplete="username" value=""');
  });

  it('reads a field sent twice as empty, never as a list', async () => {
    const { app } = await withAccount();
    const { cookie, token } = await signInPage(app);
    const response = await signIn(app, cookie, { _csrf: token, email: EMAIL, password: [PASSWORD, PASSWORD] });
    expect(response.statusCode).toBe(401);
    expect(cookieOf(response, 'cutout_session')).toBeUndefined();
  });
});

describe('signing in and out', () => {
  it('sets a session cookie for /dashboard until the session ends and drops the pre-session cookie and its token', async () => {
    const { app } = await withAccount();
    const page = await app.app.inject({ url: '/dashboard/sign-in' });
    const presession = cookieOf(page, 'cutout_presession')!.value;
    const before = Date.now();
    const signedIn = await app.app.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: FORM,
      cookies: { cutout_presession: presession },
      payload: form({ _csrf: csrfOf(page), email: EMAIL, password: PASSWORD }),
    });
    const after = Date.now();
    expect(signedIn.statusCode).toBe(303);
    const session = cookieOf(signedIn, 'cutout_session')!;
    expect(session).toMatchObject({ path: '/dashboard', httpOnly: true, sameSite: 'Lax' });
    expect(session.secure).toBeFalsy();
    // The cookie's Expires has whole seconds.
    const expires = (session.expires as Date).getTime();
    expect(expires).toBeGreaterThanOrEqual(before + app.config.sessionTtl * 1000 - 1000);
    expect(expires).toBeLessThanOrEqual(after + app.config.sessionTtl * 1000);
    const cleared = cookieOf(signedIn, 'cutout_presession')!;
    expect(cleared).toMatchObject({ value: '', path: '/dashboard' });
    expect((cleared.expires as Date).getTime()).toBeLessThan(before);

    // Signed in, the pages take the session's token, not the pre-session one.
    const cookies = { cutout_session: session.value, cutout_presession: presession };
    const tokensPage = await app.app.inject({ url: '/dashboard/tokens', cookies });
    expect(tokensPage.statusCode).toBe(200);
    const sessionToken = csrfOf(tokensPage);
    expect(sessionToken).not.toBe(csrfOf(page));
    expect(cookieOf(tokensPage, 'cutout_presession')).toBeUndefined();
    const stale = await app.app.inject({ method: 'POST', url: '/dashboard/sign-out', headers: FORM, cookies, payload: form({ _csrf: csrfOf(page) }) });
    expect(stale.statusCode).toBe(403);
    expect(cookieOf(stale, 'cutout_session')).toBeUndefined();

    const signedOut = await app.app.inject({ method: 'POST', url: '/dashboard/sign-out', headers: FORM, cookies, payload: form({ _csrf: sessionToken }) });
    expect(signedOut.statusCode).toBe(303);
    expect(signedOut.headers.location).toBe('/dashboard/sign-in?signed-out');
    const gone = cookieOf(signedOut, 'cutout_session')!;
    expect(gone).toMatchObject({ value: '', path: '/dashboard' });
    expect((gone.expires as Date).getTime()).toBeLessThan(before);
    expect((await app.app.inject({ url: '/dashboard/tokens', cookies })).headers.location).toBe('/dashboard/sign-in');
  });

  it('the session cookie is Secure behind https', async () => {
    const { app } = await withAccount({ trustProxy: true });
    const headers = { 'x-forwarded-proto': 'https' };
    const page = await app.app.inject({ url: '/dashboard/sign-in', headers });
    const signedIn = await app.app.inject({
      method: 'POST',
      url: '/dashboard/sign-in',
      headers: { ...FORM, ...headers },
      cookies: { cutout_presession: cookieOf(page, 'cutout_presession')!.value },
      payload: form({ _csrf: csrfOf(page), email: EMAIL, password: PASSWORD }),
    });
    expect(cookieOf(signedIn, 'cutout_session')).toMatchObject({ secure: true, httpOnly: true, path: '/dashboard' });
  });
});

describe('pages for signed-in owners', () => {
  it('send a fresh installation to setup and anyone else without a live session to sign-in', async () => {
    const fresh = await start();
    const toSetup = await fresh.app.inject({ url: '/dashboard/tokens' });
    expect(toSetup.statusCode).toBe(303);
    expect(toSetup.headers.location).toBe('/dashboard/setup');
    await fresh.close();
    t = undefined;

    const { app, secret } = await withAccount();
    for (const cookies of [{}, { cutout_session: 'x'.repeat(43) }, { cutout_session: `${secret}x` }] as Record<string, string>[]) {
      for (const url of ['/dashboard/tokens', '/dashboard/usage', '/dashboard/try-it']) {
        const response = await app.app.inject({ url, cookies });
        expect(response.statusCode).toBe(303);
        expect(response.headers.location).toBe('/dashboard/sign-in');
      }
    }
  });

  it('are shown with a live session, never cached', async () => {
    const { app, secret } = await withAccount();
    for (const url of ['/dashboard/tokens', '/dashboard/usage', '/dashboard/try-it']) {
      const response = await app.app.inject({ url, cookies: { cutout_session: secret } });
      expect(response.statusCode).toBe(200);
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.body).toContain(EMAIL);
    }
  });
});

describe("try-it's JSON endpoint", () => {
  const remove = (app: DashboardApp, cookies: Record<string, string>, headers: Record<string, string> = {}) =>
    app.app.inject({ method: 'POST', url: '/dashboard/try-it/remove', cookies, headers: { 'content-type': 'application/octet-stream', ...headers }, payload: Buffer.alloc(0) });

  it('takes a session, never a token: 401 missing_token without one', async () => {
    const { app } = await withAccount();
    const managed = (await app.tokens.exchange((await app.tokens.createUserToken('t')).tokenId)).managedToken;
    for (const response of [await remove(app, {}), await remove(app, {}, { authorization: managed })]) {
      expect(response.statusCode).toBe(401);
      expect(response.json()).toMatchObject({ code: 'missing_token', detail: 'Sign in to the dashboard first: this endpoint takes the dashboard session cookie, not a token.' });
    }
  });

  it("takes the session's CSRF token in x-csrf-token, and refuses a missing or another one with 400", async () => {
    const { app, secret } = await withAccount();
    const token = csrfOf(await app.app.inject({ url: '/dashboard/try-it', cookies: { cutout_session: secret } }));
    const signInPage = await app.app.inject({ url: '/dashboard/sign-in' });
    const seed = cookieOf(signInPage, 'cutout_presession')!.value;
    const cookies = { cutout_session: secret, cutout_presession: seed };
    const detail = 'The x-csrf-token header is missing or does not belong to this session; reload the page.';
    for (const headers of [{}, { 'x-csrf-token': '' }, { 'x-csrf-token': csrfOf(signInPage) }, { 'x-csrf-token': token.slice(2) }] as Record<string, string>[]) {
      const response = await remove(app, cookies, headers);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ code: 'invalid_request', detail });
    }
    // Past the guard, the empty body is what is wrong.
    const passed = await remove(app, cookies, { 'x-csrf-token': token });
    expect(passed.statusCode).toBe(400);
    expect(passed.json().detail).toBe('Send the image as the request body (application/octet-stream).');
  });
});

describe('the session plugin', () => {
  it('refuses to be registered before the cookie parser it reads from', async () => {
    const app = Fastify();
    try {
      await expect(app.register(sessionPlugin).ready()).rejects.toThrow(/dependency '@fastify\/cookie' of plugin 'cutout-dashboard-session'/);
    } finally {
      await app.close().catch(() => {});
    }
    const withCookies = Fastify();
    await withCookies.register(cookie).register(sessionPlugin).ready();
    await withCookies.close();
  });
});
