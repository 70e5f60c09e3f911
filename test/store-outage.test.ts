import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelService } from '../src/model/model-service.js';
import { openPostgresStore } from '../src/store/postgres-store.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { startCuttableProxy, targetOf, type CuttableProxy } from './helpers/cuttable-proxy.js';
import { fakeSegmenter } from './helpers/fake-segmenter.js';

// PostgreSQL going away for a while (a restart, a failover), played with a proxy in front of
// the shared test server that is cut and restored. What must hold: every request
// that needs the database is answered 503 store_unavailable with Retry-After, fast; the
// process does not crash (node-postgres reports the cut idle connections as 'error' events
// on the pool, which end a process that does not listen); once the database is back the same
// app answers normally again, without a restart.

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) console.error('[cutout tests] PostgreSQL outage tests SKIPPED: DATABASE_URL is not set (.ci/run sets it)');

const exchange = (t: TestApp, tokenId: string) => t.app.inject({ method: 'POST', url: '/api/v1/auth/token', headers: { token: tokenId } });
// An empty image: refused with 400 after the token check, so no model pass is needed to see
// that the request got past the database.
const emptyRemoval = (t: TestApp, managed: string) =>
  t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: managed }, payload: { image_base64: '' } });

describe.skipIf(!databaseUrl)('PostgreSQL gone for a while', () => {
  let proxy: CuttableProxy;
  let t: TestApp;
  let tokenId: string;
  let managed: string;
  const schema = `cutout_test_${randomBytes(6).toString('hex')}`;

  beforeAll(async () => {
    proxy = await startCuttableProxy(targetOf(databaseUrl!, 5432));
    const store = await openPostgresStore(proxy.rewrite(databaseUrl!), { schema });
    t = await startTestApp({}, { store, model: ModelService.ofSegmenter(fakeSegmenter()) });
    ({ tokenId } = await t.tokens.createUserToken('outage'));
    managed = (await exchange(t, tokenId)).json().managed_token;
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.close();
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query(`drop schema if exists ${client.escapeIdentifier(schema)} cascade`);
    await client.end();
  });

  it('answers 503 store_unavailable with Retry-After while it is gone, and normally once it is back', async () => {
    // The pool holds idle connections now, which the cut resets under it.
    expect((await emptyRemoval(t, managed)).statusCode).toBe(400);
    // Whether or not the pool has seen its idle connections reset yet, every answer is a 503.
    await proxy.cut();

    for (const answer of [await exchange(t, tokenId), await emptyRemoval(t, managed)]) {
      expect(answer.statusCode, answer.body).toBe(503);
      expect(answer.headers['content-type']).toMatch(/problem\+json/);
      expect(answer.json()).toMatchObject({ code: 'store_unavailable', status: 503 });
      expect(Number(answer.headers['retry-after'])).toBeGreaterThan(0);
      // The driver's own words stay in the log.
      expect(answer.body).not.toMatch(/ECONNREFUSED|terminated|connect/i);
    }
    // Refused connections are reported at once, not after the pool's connection timeout
    // (5 s, src/store/postgres-store.ts): a ceiling as generous as that allows.
    const started = performance.now();
    expect((await exchange(t, tokenId)).statusCode).toBe(503);
    expect(performance.now() - started).toBeLessThan(4000);

    await proxy.restore();
    const renewed = await exchange(t, tokenId);
    expect(renewed.statusCode, renewed.body).toBe(200);
    expect((await emptyRemoval(t, renewed.json().managed_token)).statusCode).toBe(400);
    expect((await emptyRemoval(t, managed)).statusCode).toBe(400);
  });
});
