import { unzipSync, zipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountService } from '../src/dashboard/account-service.js';
import { ModelService } from '../src/model/model-service.js';
import { multipartBody } from '../scripts/lib/multipart-body.js';
import { startDashboardApp, type DashboardApp } from './browser/dashboard-app.js';
import { Browser } from './helpers/dashboard-browser.js';
import { makePhoto } from './helpers/images.js';
import { squareSegmenter } from './helpers/square-segmenter.js';

/**
 * The Batch page's endpoints over HTTP: a job made with the dashboard session is made as the
 * API makes one (the same checks and the same problem+json), belongs to the token chosen,
 * and is the account's alone; every bad request is a clear 4xx. The page in a browser is
 * test/browser/batch-page.test.ts.
 */

const PASSWORD = 'correct horse battery';

describe('the Batch endpoints', () => {
  let t: DashboardApp;
  let owner: Browser;
  let csrf: string;
  let tokenId: string;
  let managed: string;
  let strangerToken: string;
  let accountId: string;
  let png: Buffer;
  const segmenter = squareSegmenter();

  beforeAll(async () => {
    t = await startDashboardApp({ urlAllowPrivate: true, rateLimit: 0 }, { model: ModelService.ofSegmenter(segmenter) });
    const accounts = new AccountService(t.store, { sessionTtl: 3600 });
    const account = await accounts.createAccount('owner@example.com', PASSWORD);
    const stranger = await accounts.createAccount('stranger@example.com', PASSWORD);
    accountId = account.id;
    const made = await t.tokens.createUserToken('catalogue', null, account.id);
    tokenId = made.token.id;
    managed = (await t.tokens.exchange(made.tokenId)).managedToken;
    strangerToken = (await t.tokens.createUserToken('theirs', null, stranger.id)).token.id;
    owner = new Browser(t);
    const signIn = await owner.submit('/dashboard/sign-in', '/dashboard/sign-in', { email: 'owner@example.com', password: PASSWORD });
    expect(signIn.statusCode).toBe(303);
    csrf = await owner.csrf('/dashboard/batch');
    png = await makePhoto('png', 32, 24);
  });
  afterAll(async () => {
    segmenter.release();
    await t?.close();
  });

  const json = (browser: Browser, url: string, body: unknown, headers: Record<string, string> = {}) =>
    browser.request('POST', url, { headers: { 'content-type': 'application/json', 'x-csrf-token': csrf, ...headers }, body: Buffer.from(JSON.stringify(body)) });
  const problem = (answer: { statusCode: number; headers: Record<string, unknown>; json(): unknown }) => ({
    status: answer.statusCode,
    ...(answer.json() as { code: string; detail: string }),
    contentType: answer.headers['content-type'],
  });
  const urls = { images: [{ image_url: 'http://127.0.0.1:9/a.png' }] };

  it('takes the session and its CSRF header, never less', async () => {
    const stranger = new Browser(t);
    expect(problem(await json(stranger, `/dashboard/batch/jobs?token=${tokenId}`, urls))).toMatchObject({ status: 401, code: 'missing_token', contentType: 'application/problem+json; charset=utf-8' });
    expect(problem(await json(owner, `/dashboard/batch/jobs?token=${tokenId}`, urls, { 'x-csrf-token': 'forged' }))).toMatchObject({ status: 400, code: 'invalid_request', detail: expect.stringContaining('x-csrf-token') });
    expect((await stranger.request('GET', '/dashboard/batch')).headers.location).toBe('/dashboard/sign-in');
    expect(problem(await stranger.request('GET', '/dashboard/batch/jobs/job_AAAAAAAAAAAAAAAAAAAAAA'))).toMatchObject({ status: 401 });
    // An API token is no session.
    const withToken = await t.app.inject({ method: 'POST', url: `/dashboard/batch/jobs?token=${tokenId}`, headers: { authorization: managed, 'content-type': 'application/json', 'x-csrf-token': csrf }, payload: urls });
    expect(withToken.statusCode).toBe(401);
  });

  it("makes a job only with one of the account's active tokens", async () => {
    expect(problem(await json(owner, '/dashboard/batch/jobs', urls))).toMatchObject({ status: 400, code: 'invalid_request', detail: expect.stringContaining('token') });
    expect(problem(await json(owner, `/dashboard/batch/jobs?token=${strangerToken}`, urls))).toMatchObject({ status: 400, detail: expect.stringContaining("not one of this account's") });
    const old = (await t.tokens.createUserToken('old', null, accountId)).token;
    await t.tokens.revokeUserToken(old.id, accountId);
    expect(problem(await json(owner, `/dashboard/batch/jobs?token=${old.id}`, urls))).toMatchObject({ status: 400, code: 'invalid_request', detail: expect.stringContaining('“old” is revoked') });
    // The page offers the active ones only.
    const page = (await owner.request('GET', '/dashboard/batch')).body;
    expect(page).toContain(`<option value="${tokenId}">catalogue`);
    expect(page).not.toContain(`<option value="${old.id}">`);
    expect(await t.store.listJobsOfAccount(accountId, 10)).toEqual([]);
  });

  it('refuses what the API refuses, with the same problem', async () => {
    const body = { ...urls, max_width: 'wide' };
    const fromPage = problem(await json(owner, `/dashboard/batch/jobs?token=${tokenId}`, body));
    const fromApi = problem(await t.app.inject({ method: 'POST', url: '/api/v1/jobs', headers: { authorization: managed }, payload: body }));
    expect(fromPage).toMatchObject({ status: 400, code: 'invalid_request', detail: expect.stringContaining('max_width') });
    expect({ ...fromPage, instance: undefined, request_id: undefined }).toEqual({ ...fromApi, instance: undefined, request_id: undefined });

    expect(problem(await json(owner, `/dashboard/batch/jobs?token=${tokenId}`, { images: [] }))).toMatchObject({ status: 400 });
    const form = await owner.request('POST', `/dashboard/batch/jobs?token=${tokenId}`, { headers: { 'content-type': 'text/plain', 'x-csrf-token': csrf }, body: Buffer.from('x') });
    expect(problem(form)).toMatchObject({ status: 415, code: 'unsupported_media_type' });
    const notMultipart = await owner.request('POST', `/dashboard/batch/jobs/multipart?token=${tokenId}`, { headers: { 'content-type': 'application/json', 'x-csrf-token': csrf }, body: Buffer.from('{}') });
    expect(problem(notMultipart)).toMatchObject({ status: 415, code: 'unsupported_media_type' });
    const nested = zipSync({ 'inner.zip': zipSync({ 'a.png': png }) });
    const upload = multipartBody([{ name: 'files', filename: 'outer.zip', contentType: 'application/zip', data: nested }]);
    const refused = await owner.request('POST', `/dashboard/batch/jobs/multipart?token=${tokenId}`, { headers: { 'content-type': upload.contentType, 'x-csrf-token': csrf }, body: upload.body });
    expect(problem(refused)).toMatchObject({ status: 400, detail: expect.stringContaining('another archive') });
    expect(await t.store.listJobsOfAccount(accountId, 10)).toEqual([]);
  });

  it('makes a job of uploaded files and a zip, which the API token of the same account sees, and no other account', async () => {
    const upload = multipartBody([
      { name: 'format', data: 'webp' },
      { name: 'files', filename: 'shots/left.png', contentType: 'image/png', data: png },
      { name: 'files', filename: 'more.zip', contentType: 'application/zip', data: zipSync({ 'right.png': png, '__MACOSX/._right.png': new Uint8Array([1]) }) },
    ]);
    const made = await owner.request('POST', `/dashboard/batch/jobs/multipart?token=${tokenId}`, { headers: { 'content-type': upload.contentType, 'x-csrf-token': csrf }, body: upload.body });
    expect(made.statusCode, made.body).toBe(202);
    const job = made.json() as { id: string; status_url: string; results_url: string; counts: { total: number }; options: unknown; user_token_id: string };
    expect(job).toMatchObject({ status_url: `/dashboard/batch/jobs/${job.id}`, results_url: `/dashboard/batch/jobs/${job.id}/results`, counts: { total: 2 }, options: { format: 'webp' }, user_token_id: tokenId });

    // The API's token of the account sees the same job.
    await expect.poll(async () => (await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${job.id}`, headers: { authorization: managed } })).json().status, { timeout: 20_000 }).toBe('done');
    const status = (await owner.request('GET', job.status_url)).json() as { status: string; counts: { succeeded: number } };
    expect(status).toMatchObject({ status: 'done', counts: { succeeded: 2 } });
    const zip = await owner.request('GET', job.results_url);
    expect([zip.statusCode, zip.headers['content-type']]).toEqual([200, 'application/zip']);
    expect(Object.keys(unzipSync(new Uint8Array(zip.rawPayload))).sort()).toEqual(['left.webp', 'right.webp']);

    // Another account's session: 404 for the job, its results and its cancel.
    const other = new Browser(t);
    expect((await other.submit('/dashboard/sign-in', '/dashboard/sign-in', { email: 'stranger@example.com', password: PASSWORD })).statusCode).toBe(303);
    expect(problem(await other.request('GET', job.status_url))).toMatchObject({ status: 404, code: 'not_found' });
    expect(problem(await other.request('GET', job.results_url))).toMatchObject({ status: 404, code: 'not_found' });
    const cancel = await other.submit('/dashboard/batch', `${job.status_url}/cancel`, {});
    expect(cancel.statusCode).toBe(404);
    const page = await other.request('GET', '/dashboard/batch');
    expect(page.body).not.toContain(job.id);
    expect((await owner.request('GET', '/dashboard/batch')).body).toContain(job.id);
  });

  it("lists the jobs the API made for the account too, and cancels one with the page's form", async () => {
    // The model holds the first image: the job waits until it is cancelled.
    segmenter.hold();
    const upload = multipartBody([{ name: 'file', filename: 'held.png', contentType: 'image/png', data: png }]);
    const made = await t.app.inject({ method: 'POST', url: '/api/v1/jobs/multipart', headers: { authorization: managed, 'content-type': upload.contentType }, payload: upload.body });
    expect(made.statusCode).toBe(202);
    const id = (made.json() as { id: string }).id;
    expect((await owner.request('GET', '/dashboard/batch')).body).toContain(`data-job="${id}"`);
    const noCsrf = await owner.request('POST', `/dashboard/batch/jobs/${id}/cancel`, { form: {} });
    expect(noCsrf.statusCode).toBe(403);
    expect(((await owner.request('GET', `/dashboard/batch/jobs/${id}`)).json() as { status: string }).status).toMatch(/^(queued|running)$/);
    const cancelled = await owner.submit('/dashboard/batch', `/dashboard/batch/jobs/${id}/cancel`, {});
    expect([cancelled.statusCode, cancelled.headers.location]).toEqual([303, '/dashboard/batch']);
    expect((await owner.request('GET', `/dashboard/batch/jobs/${id}`)).json()).toMatchObject({ status: 'cancelled', counts: { total: 1, cancelled: 1 } });
    segmenter.release();
  });
});
