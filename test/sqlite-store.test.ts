import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { ModelService } from '../src/model/model-service.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { fakeSegmenter } from './helpers/fake-segmenter.js';

// What docs/configuration.md promises of the default store: WAL with full fsync, and a write lock held
// by another process past the busy timeout answered as an outage (503 store_unavailable),
// after which the same app carries on by itself.

const apps: TestApp[] = [];
afterAll(async () => {
  for (const t of apps) await t.close();
});
afterEach(() => vi.restoreAllMocks());

describe('the SQLite store', () => {
  it('runs in WAL mode with synchronous = FULL on its own connection', async () => {
    // The pragmas are per connection: read them on the connection the store opened.
    const opened: SQLite.Database[] = [];
    const pragma = SQLite.prototype.pragma;
    vi.spyOn(SQLite.prototype, 'pragma').mockImplementation(function (this: SQLite.Database, ...args: Parameters<typeof pragma>) {
      opened.push(this);
      return pragma.apply(this, args);
    });
    const t = await startTestApp({}, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    apps.push(t);
    vi.restoreAllMocks();
    const connections = [...new Set(opened)];
    expect(connections).toHaveLength(1);
    // 2 is FULL (0 OFF, 1 NORMAL, 3 EXTRA).
    expect(connections[0].pragma('synchronous', { simple: true })).toBe(2);
    expect(connections[0].pragma('journal_mode', { simple: true })).toBe('wal');
  });

  it('answers 503 store_unavailable while another connection holds the write lock past the busy timeout, and carries on once it is let go', { timeout: 60_000 }, async () => {
    const t = await startTestApp({}, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    apps.push(t);
    const { tokenId } = await t.tokens.createUserToken('lock');
    // Exchanging a Token ID writes a managed token: it needs the write lock.
    const exchange = () => t.app.inject({ method: 'POST', url: '/api/v1/auth/token', headers: { token: tokenId } });
    expect((await exchange()).statusCode).toBe(200);

    // Another writer (the CLI, a second server on this data directory) that does not let go.
    const holder = new SQLite(join(t.config.dataDir, 'cutout.sqlite'));
    try {
      holder.exec('begin immediate');
      const answer = await exchange();
      expect(answer.statusCode, answer.body).toBe(503);
      expect(answer.headers['content-type']).toMatch(/problem\+json/);
      expect(answer.json()).toMatchObject({ code: 'store_unavailable', status: 503 });
      expect(Number(answer.headers['retry-after'])).toBeGreaterThan(0);
      expect(answer.body).not.toMatch(/SQLITE_BUSY|locked/i);
      holder.exec('rollback');
    } finally {
      holder.close();
    }
    const after = await exchange();
    expect(after.statusCode, after.body).toBe(200);
  });
});
