import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelService } from '../src/model/model-service.js';
import { startDashboardApp, type DashboardApp } from './browser/dashboard-app.js';
import { fakeSegmenter } from './helpers/fake-segmenter.js';

// A client may name its request (`x-request-id`, up to 128 of A–Z a–z 0–9 . _ -); anything
// else is replaced by an id of the server's own, so that what a client sends cannot forge or
// break the log's lines (log injection) or the answers that repeat it.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('x-request-id from the client', () => {
  let t: DashboardApp;
  beforeAll(async () => {
    t = await startDashboardApp({}, { model: ModelService.ofSegmenter(fakeSegmenter()) });
  });
  afterAll(async () => t?.close());

  /** An API request that fails (no token), so the id shows in the body, the header and the log. */
  const ask = (requestId: string) => t.app.inject({ method: 'POST', url: '/api/v1/auth/token', headers: { 'x-request-id': requestId } });
  const loggedIds = () => new Set(t.logs.map((line) => line.reqId));

  it.each(['a', 'Build-42_retry.3', 'x'.repeat(128)])('is kept when it is in the documented set: %s', async (requestId) => {
    const answer = await ask(requestId);
    expect(answer.headers['x-request-id']).toBe(requestId);
    expect(answer.json().request_id).toBe(requestId);
    expect(loggedIds()).toContain(requestId);
  });

  it.each([
    ['a space', 'two words'],
    ['a forged JSON field', 'x","level":60,"msg":"forged'],
    ['a percent-encoded newline', 'a%0aforged'],
    ['a slash and a colon', 'ns/id:1'],
    ['non-ASCII', 'caf\u00e9'],
    ['129 characters', 'x'.repeat(129)],
  ])('is replaced when it has %s', async (_what, requestId) => {
    const answer = await ask(requestId);
    const given = answer.headers['x-request-id'];
    expect(given).toMatch(UUID);
    expect(answer.json().request_id).toBe(given);
    expect(loggedIds()).toContain(given);
    expect(JSON.stringify(t.logs)).not.toContain(JSON.stringify(requestId).slice(1, -1));
  });
});
