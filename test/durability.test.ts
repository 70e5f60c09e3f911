import { randomBytes, randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { hashToken, TokenService } from '../src/auth/token-service.js';
import { loadConfig } from '../src/config.js';
import { migrationProvider } from '../src/store/migrations.js';
import { openStore } from '../src/store/open-store.js';
import { openPostgresStore } from '../src/store/postgres-store.js';
import type { Store } from '../src/store/store.js';
import { makePhoto } from './helpers/images.js';
import { childEnv, exchangeOverHttp, killLeftoverChildren, removeBackgroundOverHttp, spawnTs, startServer, type HttpAnswer } from './processes/server-process.js';
import { integrityCheck } from './helpers/stores.js';

// Durability: a token the store said was committed is there after `kill -9`.
//
// What SIGKILL proves, and what it does not. SIGKILL ends the process, not the machine:
// whatever the process had handed to the kernel (written to the SQLite file or its WAL, sent
// to PostgreSQL) survives it, and whatever lived only in the process's memory is lost. So
// these tests prove that no transaction the store reported committed lived only in the
// process's memory, and that a database left by a process killed at any moment opens again,
// migrates and passes `PRAGMA integrity_check`. They do not prove survival of a power cut or
// a kernel crash: that is what `synchronous = FULL` (an fsync at every commit) is for, and a
// test cannot pull the plug on its own machine. With `synchronous = OFF` these tests would
// still pass.

const TOKEN_ID = /^cut_user_[A-Za-z0-9_-]{43}$/;
const WRITER_ROUNDS = 5;

const sqliteConfig = (dataDir: string) => loadConfig({ CUTOUT_DATA_DIR: dataDir });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const dataDirs: string[] = [];

async function newDataDir(): Promise<string> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cutout-durability-'));
  dataDirs.push(dataDir);
  return dataDir;
}

// Tests run concurrently: a child left running by a failed test is killed once they are all done.
afterAll(async () => {
  await killLeftoverChildren();
  await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});


/** Collects a child's output; `closed` settles once it has exited and its pipes are drained. */
function watch(child: ReturnType<typeof spawnTs>) {
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk: Buffer) => (out.stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (out.stderr += chunk.toString()));
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  /** Resolves once stdout holds `count` whole lines; rejects if the child ends first. */
  const lines = (count: number) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (out.stdout.split('\n').length > count) {
          child.stdout!.off('data', check);
          resolve();
        }
      };
      child.stdout!.on('data', check);
      check();
      void closed.then(() => reject(new Error(`the child ended after ${out.stdout.split('\n').length - 1} lines; stderr:\n${out.stderr}`)));
    });
  return { out, closed, lines };
}

/**
 * Runs test/processes/token-writer.ts until `killAfterMs` after it printed its first Token
 * ID, kills it with SIGKILL, and returns every Token ID it printed: each one a token the
 * store had reported committed.
 */
async function writeTokensUntilKilled(env: NodeJS.ProcessEnv, name: string, killAfterMs: number): Promise<string[]> {
  const child = spawnTs('test/processes/token-writer.ts', [name], env);
  const { out, closed, lines } = watch(child);
  await lines(1);
  await sleep(killAfterMs);
  child.kill('SIGKILL');
  // It was killed, not stopped by an error of its own.
  expect(await closed, out.stderr).toEqual({ code: null, signal: 'SIGKILL' });
  const printed = out.stdout.split('\n');
  // Text after the last newline would be a line the kill cut short: not a promise of anything.
  printed.pop();
  for (const line of printed) expect(line).toMatch(TOKEN_ID);
  return printed;
}

/** Runs the writer `WRITER_ROUNDS` times on one database, each killed at a random moment. */
async function killWriterRounds(env: NodeJS.ProcessEnv): Promise<string[]> {
  const printed: string[] = [];
  for (let round = 0; round < WRITER_ROUNDS; round++) {
    const ids = await writeTokensUntilKilled(env, `round-${round}`, randomInt(50, 400));
    expect(ids.length).toBeGreaterThan(0);
    printed.push(...ids);
  }
  return printed;
}

/**
 * Every printed Token ID is in the store and exchanges for a managed token; and nothing is
 * there that the writers did not create: at most one token per kill was committed and not
 * yet printed.
 */
async function expectPrintedTokensStored(store: Store, printed: string[], kills: number): Promise<void> {
  const missing: string[] = [];
  for (const tokenId of printed) if (!(await store.findUserTokenByHash(hashToken(tokenId)))) missing.push(tokenId);
  expect(missing, `${missing.length} of ${printed.length} printed Token IDs are not in the store`).toEqual([]);
  const stored = await store.listUserTokens();
  expect(stored.length).toBeGreaterThanOrEqual(printed.length);
  expect(stored.length).toBeLessThanOrEqual(printed.length + kills);

  const tokens = new TokenService(store, { managedTokenTtl: 60 });
  for (const tokenId of printed) {
    const { managedToken } = await tokens.exchange(tokenId);
    expect((await tokens.verifyManagedToken(managedToken, undefined)).userToken.revokedAt).toBeNull();
  }
}

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  process.stderr.write('\n[cutout tests] PostgreSQL durability test SKIPPED: DATABASE_URL is not set (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test)\n\n');
}

describe.concurrent('durability under SIGKILL', () => {
  it('SQLite: every Token ID the writer printed before being killed is stored, and the database is intact', { timeout: 180_000 }, async () => {
    const dataDir = await newDataDir();
    const printed = await killWriterRounds(childEnv({ CUTOUT_DATA_DIR: dataDir }));
    // The last kill left its WAL behind: nobody checkpointed or closed anything.
    expect(existsSync(join(dataDir, 'cutout.sqlite-wal'))).toBe(true);

    // Opened the way the server and the CLI open it (recovering the WAL, running the migrations).
    const store = await openStore(sqliteConfig(dataDir));
    try {
      expect(integrityCheck(dataDir)).toBe('ok');
      await expectPrintedTokensStored(store, printed, WRITER_ROUNDS);
    } finally {
      await store.close();
    }
  });

  // Kysely's SQLite adapter declares no transactional DDL, so unless the store overrides that,
  // each migration statement commits alone and a first start killed between a migration's
  // first statement and the row that records it leaves a database on which every later start
  // fails ("database migration 0001-tokens failed": table "user_tokens" already exists).
  it('SQLite: a first start killed during its migrations leaves a database that opens and works', { timeout: 180_000 }, async () => {
    const CHILDREN = 8;
    const DIRS_PER_CHILD = 4;
    const base = await newDataDir();
    const migrations = Object.keys(await migrationProvider.getMigrations());
    // Which first starts the kills cut short: the file is there, not every migration is recorded.
    const isCutShort = (dir: string) => {
      if (!existsSync(join(dir, 'cutout.sqlite'))) return false;
      const database = new SQLite(join(dir, 'cutout.sqlite'));
      try {
        if (!database.prepare("select 1 from sqlite_master where name = 'kysely_migration'").get()) return true;
        const recorded = (database.prepare('select name from kysely_migration').all() as { name: string }[]).map((row) => row.name);
        return migrations.some((name) => !recorded.includes(name));
      } finally {
        database.close();
      }
    };

    const runs: string[][] = [];
    let cutShort: string[] = [];
    // A kill can fall between two starts; on a busy machine all eight of a round sometimes
    // do, so rounds go on (at most five) until one start at least was cut short.
    for (let round = 0; round < 5 && cutShort.length === 0; round++) {
      const roundRuns = Array.from({ length: CHILDREN }, (_, c) => Array.from({ length: DIRS_PER_CHILD }, (_, d) => join(base, `round${round}-child${c}-dir${d}`)));
      runs.push(...roundRuns);
      await Promise.all(
        roundRuns.map(async (dirs) => {
          const child = spawnTs('test/processes/store-opener.ts', dirs, childEnv({}));
          const { out, closed, lines } = watch(child);
          // Let it finish a random number of first starts, timing the last one; then kill it a
          // random fraction of that time later, which most often falls inside the next one.
          // (Its first line is `opening`, then one line per finished start.)
          const complete = randomInt(0, DIRS_PER_CHILD - 1);
          await lines(1 + complete);
          const before = performance.now();
          await lines(2 + complete);
          await sleep(Math.random() * (performance.now() - before));
          child.kill('SIGKILL');
          expect(await closed, out.stderr).toEqual({ code: null, signal: 'SIGKILL' });
        }),
      );
      cutShort = runs.flat().filter(isCutShort);
    }
    // Otherwise every kill fell between two starts and this test proved nothing.
    expect(cutShort.length).toBeGreaterThan(0);

    const failures: string[] = [];
    for (const dir of runs.flat().filter((d) => existsSync(d))) {
      try {
        const store = await openStore(sqliteConfig(dir));
        try {
          const tokens = new TokenService(store, { managedTokenTtl: 60 });
          const { tokenId } = await tokens.createUserToken('after-the-kill');
          await tokens.exchange(tokenId);
        } finally {
          await store.close();
        }
        expect(integrityCheck(dir)).toBe('ok');
      } catch (error) {
        const cause = (error as Error).cause as Error | undefined;
        failures.push(`${dir}: ${(error as Error).message}${cause ? `: ${cause.message}` : ''}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('SQLite: a server killed mid-request keeps every token it created or answered for', { timeout: 180_000 }, async () => {
    const dataDir = await newDataDir();
    const store = await openStore(sqliteConfig(dataDir));
    const userTokens: string[] = [];
    try {
      const tokens = new TokenService(store, { managedTokenTtl: 600 });
      for (const name of ['alpha', 'beta', 'gamma']) userTokens.push((await tokens.createUserToken(name)).tokenId);
    } finally {
      await store.close();
    }
    const server = await startServer({ CUTOUT_DATA_DIR: dataDir });
    const firstManaged = await exchangeOverHttp(server.origin, userTokens[0]);

    // Exchanges one after another (each writes a managed token and `last_used_at`), until the
    // kill: every one that was answered 200 was committed first.
    const answered: string[] = [firstManaged];
    let exchanging = true;
    const exchanges = (async () => {
      for (let i = 0; exchanging; i++) {
        try {
          answered.push(await exchangeOverHttp(server.origin, userTokens[i % userTokens.length]));
        } catch {
          return;
        }
      }
    })();
    const photo = await makePhoto('jpeg', 640, 480);
    const removal = removeBackgroundOverHttp(server.origin, firstManaged, photo, 'killed-mid-request');
    const outcome = removal.then(
      (answer: HttpAnswer) => `answered ${answer.status}`,
      (error: NodeJS.ErrnoException) => error.code ?? error.message,
    );
    await server.waitForLog((line) => line.reqId === 'killed-mid-request' && line.msg === 'incoming request');
    await sleep(randomInt(0, 150));
    server.child.kill('SIGKILL');
    const exit = await server.exited;
    exchanging = false;
    await exchanges;
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: null, signal: 'SIGKILL' });
    // The removal was in flight: the process died under it.
    expect(await outcome).not.toMatch(/^answered/);
    expect(answered.length).toBeGreaterThan(1);

    const reopened = await openStore(sqliteConfig(dataDir));
    try {
      expect(integrityCheck(dataDir)).toBe('ok');
      const tokens = new TokenService(reopened, { managedTokenTtl: 600 });
      for (const managed of answered) expect((await tokens.verifyManagedToken(managed, undefined)).userToken.revokedAt).toBeNull();
      for (const tokenId of userTokens) expect((await tokens.exchange(tokenId)).managedToken).toMatch(/^cut_mgd_/);
      expect((await tokens.listUserTokens()).map((token) => token.name).sort()).toEqual(['alpha', 'beta', 'gamma']);
    } finally {
      await reopened.close();
    }
  });

  // A fresh schema; the writer reaches it through the URL (search_path), so that it opens
  // its store exactly as the server does, from DATABASE_URL alone.
  it.skipIf(!databaseUrl)('PostgreSQL: every Token ID the writer printed before being killed is stored', { timeout: 180_000 }, async () => {
    const schema = `cutout_durability_${randomBytes(6).toString('hex')}`;
    const admin = async (statement: string) => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        await client.query(statement);
      } finally {
        await client.end();
      }
    };
    await admin(`create schema ${schema}`);
    try {
      const url = new URL(databaseUrl!);
      url.searchParams.set('options', `-c search_path=${schema}`);
      const printed = await killWriterRounds(childEnv({ DATABASE_URL: url.toString() }));
      const store = await openPostgresStore(databaseUrl!, { schema });
      try {
        await expectPrintedTokensStored(store, printed, WRITER_ROUNDS);
      } finally {
        await store.close();
      }
    } finally {
      await admin(`drop schema if exists ${schema} cascade`);
    }
  });
});
