import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Database } from '../src/store/database.js';
import { migrationProvider } from '../src/store/migrations.js';
import { openSqliteStore } from '../src/store/sqlite-store.js';
import { AccountEmailTakenError, type NewAccount, type NewUserToken } from '../src/store/store.js';
import { freshStoreEach, storeEngines } from './helpers/stores.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();
const hash = () => randomBytes(32).toString('hex');

const newAccount = (email: string, seconds = 0): NewAccount => ({ id: randomUUID(), email, passwordHash: `scrypt$test$${hash()}`, createdAt: at(seconds) });
const newUserToken = (name: string, accountId: string | null = null): NewUserToken => ({
  id: randomUUID(),
  name,
  tokenHash: hash(),
  prefix: `cut_user_${randomBytes(3).toString('hex')}`,
  createdAt: at(0),
  expiresAt: null,
  accountId,
});

// The dashboard's tables (accounts, sessions, daily usage) on every engine the store runs on.
for (const engine of storeEngines()) {
  describe.skipIf(engine.skip)(`${engine.name} store: accounts, sessions, usage`, () => {
    const fresh = freshStoreEach(engine);

    it('creates accounts, refuses a second with the same email, and finds one by email with its hash', async () => {
      const first = newAccount('a@example.com');
      expect(await fresh.store.createAccount(first)).toEqual({ id: first.id, email: 'a@example.com', createdAt: at(0) });
      await expect(fresh.store.createAccount(newAccount('a@example.com', 1))).rejects.toBeInstanceOf(AccountEmailTakenError);
      const second = await fresh.store.createAccount(newAccount('b@example.com', 2));
      expect((await fresh.store.listAccounts()).map((a) => a.email)).toEqual(['a@example.com', 'b@example.com']);
      expect(await fresh.store.findAccountByEmail('a@example.com')).toEqual({ id: first.id, email: 'a@example.com', createdAt: at(0), passwordHash: first.passwordHash });
      expect(await fresh.store.findAccountByEmail('nobody@example.com')).toBeUndefined();
      expect(second.email).toBe('b@example.com');
    });

    it('gives the tokens made before any account to the first account, and only to it', async () => {
      const orphan = await fresh.store.createUserToken(newUserToken('from-before'));
      const first = await fresh.store.createAccount(newAccount('first@example.com'));
      const second = await fresh.store.createAccount(newAccount('second@example.com', 1));
      const own = await fresh.store.createUserToken(newUserToken('own', second.id));
      expect((await fresh.store.listUserTokens({ accountId: first.id })).map((t) => t.id)).toEqual([orphan.id]);
      expect((await fresh.store.listUserTokens({ accountId: second.id })).map((t) => t.id)).toEqual([own.id]);
      expect(await fresh.store.listUserTokens()).toHaveLength(2);
    });

    it('keeps sessions by hash with their account, and deletes them one by one or once expired', async () => {
      const account = await fresh.store.createAccount(newAccount('owner@example.com'));
      const [live, old] = [hash(), hash()];
      await fresh.store.createDashboardSession(live, account.id, at(0), at(3600));
      await fresh.store.createDashboardSession(old, account.id, at(0), at(60));
      expect(await fresh.store.findDashboardSession(live)).toEqual({ tokenHash: live, expiresAt: at(3600), account });
      expect(await fresh.store.findDashboardSession(hash())).toBeUndefined();
      expect(await fresh.store.deleteExpiredDashboardSessions(at(120))).toBe(1);
      expect(await fresh.store.findDashboardSession(old)).toBeUndefined();
      await fresh.store.deleteDashboardSession(live);
      expect(await fresh.store.findDashboardSession(live)).toBeUndefined();
    });

    it('sets a new password hash and deletes every session of that account, and only of that account', async () => {
      const owner = await fresh.store.createAccount(newAccount('owner@example.com'));
      const other = await fresh.store.createAccount(newAccount('other@example.com', 1));
      const [laptop, phone, theirs] = [hash(), hash(), hash()];
      await fresh.store.createDashboardSession(laptop, owner.id, at(0), at(3600));
      await fresh.store.createDashboardSession(phone, owner.id, at(0), at(3600));
      await fresh.store.createDashboardSession(theirs, other.id, at(0), at(3600));

      expect(await fresh.store.setAccountPassword(owner.id, 'scrypt$new')).toBe(2);
      expect((await fresh.store.findAccountByEmail('owner@example.com'))?.passwordHash).toBe('scrypt$new');
      expect(await fresh.store.findDashboardSession(laptop)).toBeUndefined();
      expect(await fresh.store.findDashboardSession(phone)).toBeUndefined();
      expect(await fresh.store.findDashboardSession(theirs)).toMatchObject({ account: other });
      expect((await fresh.store.findAccountByEmail('other@example.com'))?.passwordHash).not.toBe('scrypt$new');
      expect(await fresh.store.setAccountPassword(randomUUID(), 'scrypt$none')).toBeUndefined();
    });

    it('adds removals up per token and day, and lists one account’s from a day on', async () => {
      const mine = await fresh.store.createAccount(newAccount('mine@example.com'));
      const theirs = await fresh.store.createAccount(newAccount('theirs@example.com', 1));
      const a = await fresh.store.createUserToken(newUserToken('a', mine.id));
      const b = await fresh.store.createUserToken(newUserToken('b', mine.id));
      const c = await fresh.store.createUserToken(newUserToken('c', theirs.id));
      await fresh.store.recordRemoval(a.id, '2030-01-01', 'succeeded', 0.5);
      await fresh.store.recordRemoval(a.id, '2030-01-02', 'succeeded', 1.25);
      await fresh.store.recordRemoval(a.id, '2030-01-02', 'succeeded', 2);
      await fresh.store.recordRemoval(a.id, '2030-01-02', 'refused', 0);
      await fresh.store.recordRemoval(b.id, '2030-01-02', 'failed', 0);
      await fresh.store.recordRemoval(c.id, '2030-01-02', 'succeeded', 9);
      // Concurrent upserts of the same row all count.
      await Promise.all(Array.from({ length: 10 }, () => fresh.store.recordRemoval(b.id, '2030-01-03', 'succeeded', 0.1)));

      const rows = await fresh.store.listDailyUsage(mine.id, '2030-01-02');
      const sorted = [...rows].sort((x, y) => (x.day + x.userTokenId).localeCompare(y.day + y.userTokenId));
      expect(sorted.map((r) => ({ ...r, megapixels: Math.round(r.megapixels * 100) / 100 }))).toEqual(
        [
          { userTokenId: a.id, day: '2030-01-02', succeeded: 2, refused: 1, failed: 0, megapixels: 3.25 },
          { userTokenId: b.id, day: '2030-01-02', succeeded: 0, refused: 0, failed: 1, megapixels: 0 },
          { userTokenId: b.id, day: '2030-01-03', succeeded: 10, refused: 0, failed: 0, megapixels: 1 },
        ].sort((x, y) => (x.day + x.userTokenId).localeCompare(y.day + y.userTokenId)),
      );
      expect(await fresh.store.listDailyUsage(theirs.id, '2030-01-01')).toMatchObject([{ userTokenId: c.id, succeeded: 1, megapixels: 9 }]);
    });

    it('keeps one setup code for every process that asks, and lets only one of them use it', async () => {
      // Two processes on the same data, as two replicas starting at once would be.
      const other = await fresh.place.open();
      const claimed = await Promise.all([fresh.store.claimSetupCode('AAAA-AAAA-AAAA', at(0)), other.claimSetupCode('BBBB-BBBB-BBBB', at(0))]);
      expect(new Set(claimed).size).toBe(1);
      const [code] = claimed;
      expect(await fresh.store.claimSetupCode('CCCC-CCCC-CCCC', at(1))).toBe(code);
      expect(await fresh.store.consumeSetupCode('CCCC-CCCC-CCCC')).toBe(false);
      const uses = await Promise.all([fresh.store.consumeSetupCode(code), other.consumeSetupCode(code)]);
      expect(uses.sort()).toEqual([false, true]);
      await other.close();
    });
  });
}

describe('upgrading a database made before accounts existed', () => {
  it('keeps its tokens, which the first account created then owns', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'cutout-upgrade-'));
    try {
      // The schema as the first release left it: migration 0001 only, with a token in it.
      const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: new SQLite(join(dataDir, 'cutout.sqlite')) }) });
      const { error } = await new Migrator({ db, provider: migrationProvider }).migrateTo('0001-tokens');
      expect(error).toBeUndefined();
      const old = { id: randomUUID(), name: 'old', token_hash: hash(), prefix: 'cut_user_abcdef', created_at: at(0) };
      await db.insertInto('user_tokens').values(old).execute();
      await db.destroy();

      const store = await openSqliteStore(dataDir);
      try {
        expect((await store.listUserTokens()).map((t) => t.id)).toEqual([old.id]);
        const account = await store.createAccount(newAccount('owner@example.com'));
        expect((await store.listUserTokens({ accountId: account.id })).map((t) => t.id)).toEqual([old.id]);
      } finally {
        await store.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
