import { afterEach, describe, expect, it } from 'vitest';
import { AccountService } from '../src/dashboard/account-service.js';
import { ModelService } from '../src/model/model-service.js';
import { startDashboardApp, type DashboardApp } from './browser/dashboard-app.js';
import { Browser } from './helpers/dashboard-browser.js';
import { fakeSegmenter } from './helpers/fake-segmenter.js';

// The client's address is the connection's unless CUTOUT_TRUST_PROXY says a proxy in front
// sets X-Forwarded-For. Were the header believed without it, a client could send a new
// address with every guess and walk around the per-address sign-in throttle (20 failures).

const EMAIL = 'owner@example.com';
const PASSWORD = 'correct horse battery';
const ADDRESS_LIMIT = 20;

let t: DashboardApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function start(trustProxy: boolean): Promise<DashboardApp> {
  t = await startDashboardApp({ trustProxy }, { model: ModelService.ofSegmenter(fakeSegmenter()) });
  await new AccountService(t.store, { sessionTtl: 3600 }).createAccount(EMAIL, PASSWORD);
  return t;
}

/** A sign-in from a browser that says it is at `forwardedFor`; other emails than the owner's, so only the address throttle counts them. */
async function signIn(app: DashboardApp, forwardedFor: string, email: string, password: string) {
  const browser = new Browser(app);
  const csrf = await browser.csrf('/dashboard/sign-in');
  return browser.request('POST', '/dashboard/sign-in', { form: { _csrf: csrf, email, password }, headers: { 'x-forwarded-for': forwardedFor } });
}

describe('X-Forwarded-For', () => {
  it('is ignored without CUTOUT_TRUST_PROXY: guesses claiming a new address each are counted against the connection\'s', { timeout: 240_000 }, async () => {
    const app = await start(false);
    for (let i = 0; i < ADDRESS_LIMIT; i++) expect((await signIn(app, `203.0.113.${i}`, `nobody${i}@example.com`, 'wrong password')).statusCode).toBe(401);
    const blocked = await signIn(app, '198.51.100.7', EMAIL, PASSWORD);
    expect(blocked.statusCode).toBe(429);
    expect(blocked.body).toContain('Too many failed sign-ins');
  });

  it('is believed with CUTOUT_TRUST_PROXY=true: the throttle then counts per forwarded address', { timeout: 240_000 }, async () => {
    const app = await start(true);
    for (let i = 0; i < ADDRESS_LIMIT; i++) expect((await signIn(app, '203.0.113.9', `nobody${i}@example.com`, 'wrong password')).statusCode).toBe(401);
    expect((await signIn(app, '203.0.113.9', EMAIL, PASSWORD)).statusCode).toBe(429);
    expect((await signIn(app, '198.51.100.7', EMAIL, PASSWORD)).statusCode).toBe(303);
  });
});
