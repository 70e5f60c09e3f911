import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountService } from '../src/dashboard/account-service.js';
import { ModelService } from '../src/model/model-service.js';
import { startDashboardApp, type DashboardApp } from './browser/dashboard-app.js';
import { Browser } from './helpers/dashboard-browser.js';
import { fakeSegmenter } from './helpers/fake-segmenter.js';

// Every dashboard form refuses a post without the CSRF token of the page it came from (the
// setup form's refusal is in dashboard.test.ts). Each test also sends the same form with the
// right token, so that a refusal is seen to be the token's doing and not the form's.

const EMAIL = 'owner@example.com';
const PASSWORD = 'correct horse battery';

describe('CSRF on the dashboard forms', () => {
  let t: DashboardApp;
  let accountId: string;

  beforeAll(async () => {
    t = await startDashboardApp({}, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    ({ id: accountId } = await new AccountService(t.store, { sessionTtl: 3600 }).createAccount(EMAIL, PASSWORD));
  });
  afterAll(async () => t?.close());

  const signedIn = async () => {
    const browser = new Browser(t);
    const answer = await browser.submit('/dashboard/sign-in', '/dashboard/sign-in', { email: EMAIL, password: PASSWORD });
    expect([answer.statusCode, answer.headers.location]).toEqual([303, '/dashboard/tokens']);
    return browser;
  };
  const tokenNames = async () => (await t.tokens.listUserTokens(accountId)).map((token) => token.name);
  const expectExpired = (answer: { statusCode: number; body: string }) => {
    expect(answer.statusCode).toBe(403);
    expect(answer.body).toContain('This form has expired');
  };

  it('sign-in: refused without the token or with another browser\'s, and no session starts', async () => {
    const browser = new Browser(t);
    await browser.csrf('/dashboard/sign-in');
    expectExpired(await browser.request('POST', '/dashboard/sign-in', { form: { email: EMAIL, password: PASSWORD } }));
    const foreign = await new Browser(t).csrf('/dashboard/sign-in');
    expectExpired(await browser.request('POST', '/dashboard/sign-in', { form: { _csrf: foreign, email: EMAIL, password: PASSWORD } }));
    expect(browser.cookies.has('cutout_session')).toBe(false);

    const right = await browser.submit('/dashboard/sign-in', '/dashboard/sign-in', { email: EMAIL, password: PASSWORD });
    expect(right.statusCode).toBe(303);
    expect(browser.cookies.has('cutout_session')).toBe(true);
  });

  it('a token of the sign-in page stops working once signed in, even with its cookie sent back', async () => {
    const browser = new Browser(t);
    const before = await browser.csrf('/dashboard/sign-in');
    const seed = browser.cookies.get('cutout_presession');
    expect(seed).toBeTruthy();
    const answer = await browser.request('POST', '/dashboard/sign-in', { form: { _csrf: before, email: EMAIL, password: PASSWORD } });
    expect(answer.statusCode).toBe(303);
    expect(browser.cookies.has('cutout_presession')).toBe(false);
    // Someone who planted or read the pre-session cookie and its token before sign-in
    // (a shared computer, a login CSRF) holds both: neither is worth anything now.
    browser.cookies.set('cutout_presession', seed!);
    expectExpired(await browser.request('POST', '/dashboard/tokens', { form: { _csrf: before, name: 'planted', expires: '' } }));
    expectExpired(await browser.request('POST', '/dashboard/sign-out', { form: { _csrf: before } }));
    expect(await tokenNames()).not.toContain('planted');
    expect((await browser.request('GET', '/dashboard/tokens')).statusCode).toBe(200);

    expect((await browser.submit('/dashboard/tokens', '/dashboard/tokens', { name: 'own', expires: '' })).statusCode).toBe(200);
    expect(await tokenNames()).toContain('own');
  });

  it('creating a token: refused without the session\'s token or with another session\'s', async () => {
    const owner = await signedIn();
    const other = await signedIn();
    expectExpired(await owner.request('POST', '/dashboard/tokens', { form: { name: 'forged', expires: '' } }));
    expectExpired(await owner.request('POST', '/dashboard/tokens', { form: { _csrf: await other.csrf('/dashboard/tokens'), name: 'forged', expires: '' } }));
    expect(await tokenNames()).not.toContain('forged');

    const right = await owner.submit('/dashboard/tokens', '/dashboard/tokens', { name: 'wanted', expires: '' });
    expect(right.statusCode).toBe(200);
    expect(await tokenNames()).toContain('wanted');
  });

  it('revoking a token: refused without the token, which stays active', async () => {
    const owner = await signedIn();
    const { token } = await t.tokens.createUserToken('to-revoke', null, accountId);
    const action = `/dashboard/tokens/${token.id}/revoke`;
    expectExpired(await owner.request('POST', action, { form: {} }));
    expectExpired(await owner.request('POST', action, { form: { _csrf: await (await signedIn()).csrf(action) } }));
    const revokedAt = async () => (await t.tokens.listUserTokens(accountId)).find((x) => x.id === token.id)?.revokedAt;
    expect(await revokedAt()).toBeNull();

    const right = await owner.submit(action, action, {});
    expect(right.statusCode).toBe(303);
    expect(await revokedAt()).toEqual(expect.any(String));
  });

  it('signing out: refused without the token, and the session goes on', async () => {
    const owner = await signedIn();
    expectExpired(await owner.request('POST', '/dashboard/sign-out', { form: {} }));
    expectExpired(await owner.request('POST', '/dashboard/sign-out', { form: { _csrf: await (await signedIn()).csrf('/dashboard/tokens') } }));
    expect(owner.cookies.has('cutout_session')).toBe(true);
    expect((await owner.request('GET', '/dashboard/tokens')).statusCode).toBe(200);

    const right = await owner.submit('/dashboard/tokens', '/dashboard/sign-out', {});
    expect([right.statusCode, right.headers.location]).toEqual([303, '/dashboard/sign-in?signed-out']);
    expect(owner.cookies.has('cutout_session')).toBe(false);
  });
});
