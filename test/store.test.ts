import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { TokenNameTakenError, type NewUserToken } from '../src/store/store.js';
import { freshStoreEach, storeEngines } from './helpers/stores.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
/** An ISO time `seconds` after T0. */
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

function newUserToken(name: string, fields: Partial<NewUserToken> = {}): NewUserToken {
  return {
    id: randomUUID(),
    name,
    tokenHash: randomBytes(32).toString('hex'),
    prefix: `cut_user_${randomBytes(3).toString('hex')}`,
    createdAt: at(0),
    expiresAt: null,
    ...fields,
  };
}

const hash = () => randomBytes(32).toString('hex');

for (const engine of storeEngines()) {
  describe.skipIf(engine.skip)(`${engine.name} store`, () => {
    const fresh = freshStoreEach(engine);

    it('runs its migrations again on an existing database without error or data loss', async () => {
      const token = await fresh.store.createUserToken(newUserToken('before-reopen'));
      // A second store over the same data while the first is open, as a restart during a rolling deploy would.
      const second = await fresh.place.open();
      expect(await second.listUserTokens()).toEqual([token]);
      await second.close();
      await fresh.store.close();
      const third = await fresh.place.open();
      expect(await third.listUserTokens()).toEqual([token]);
    });

    it('opens a second, independent store beside one that is already migrated', async () => {
      await fresh.store.createUserToken(newUserToken('first-place'));
      // PostgreSQL: a second schema in the same database, as a second test run or deployment has.
      const otherPlace = await engine.createPlace();
      try {
        const other = await otherPlace.open();
        expect(await other.listUserTokens()).toEqual([]);
        await other.createUserToken(newUserToken('first-place'));
        expect(await fresh.store.listUserTokens()).toHaveLength(1);
      } finally {
        await otherPlace.dispose();
      }
    });

    it('creates user tokens and lists them oldest first, without their hashes', async () => {
      const later = newUserToken('later', { createdAt: at(60), expiresAt: at(86_400) });
      const earlier = newUserToken('earlier', { createdAt: at(0) });
      const createdLater = await fresh.store.createUserToken(later);
      const createdEarlier = await fresh.store.createUserToken(earlier);

      expect(createdEarlier).toEqual({
        id: earlier.id,
        name: 'earlier',
        prefix: earlier.prefix,
        createdAt: at(0),
        expiresAt: null,
        revokedAt: null,
        lastUsedAt: null,
      });
      expect(createdLater).toMatchObject({ id: later.id, expiresAt: at(86_400) });
      const listed = await fresh.store.listUserTokens();
      expect(listed).toEqual([createdEarlier, createdLater]);
      expect(JSON.stringify(listed)).not.toContain(earlier.tokenHash);
    });

    it('finds a user token by its hash, and nothing for an unknown hash', async () => {
      const wanted = newUserToken('wanted');
      const created = await fresh.store.createUserToken(wanted);
      await fresh.store.createUserToken(newUserToken('other'));

      expect(await fresh.store.findUserTokenByHash(wanted.tokenHash)).toEqual({ ...created, tokenHash: wanted.tokenHash });
      expect(await fresh.store.findUserTokenByHash(hash())).toBeUndefined();
    });

    it('refuses a second active token with the same name, and allows the name again once the first is revoked', async () => {
      const first = await fresh.store.createUserToken(newUserToken('ci'));
      await expect(fresh.store.createUserToken(newUserToken('ci'))).rejects.toBeInstanceOf(TokenNameTakenError);
      await expect(fresh.store.createUserToken(newUserToken('ci'))).rejects.toThrow('an active token is already named "ci"');
      expect((await fresh.store.listUserTokens()).map((t) => t.id)).toEqual([first.id]);

      expect(await fresh.store.revokeUserToken(first.id, at(10))).toBe(true);
      const second = await fresh.store.createUserToken(newUserToken('ci', { createdAt: at(20) }));

      expect(await fresh.store.findActiveUserTokensByName('ci')).toEqual([second]);
      expect((await fresh.store.listUserTokens()).map((t) => [t.id, t.revokedAt])).toEqual([
        [first.id, at(10)],
        [second.id, null],
      ]);
    });

    it('revokes a token once: true the first time, false after, and false for an unknown id', async () => {
      const token = await fresh.store.createUserToken(newUserToken('to-revoke'));
      const bystander = await fresh.store.createUserToken(newUserToken('bystander'));

      expect(await fresh.store.revokeUserToken(token.id, at(5))).toBe(true);
      expect(await fresh.store.revokeUserToken(token.id, at(9))).toBe(false);
      expect(await fresh.store.revokeUserToken(randomUUID(), at(9))).toBe(false);

      const listed = await fresh.store.listUserTokens();
      // The first revocation time stays; the bystander is untouched.
      expect(listed.find((t) => t.id === token.id)?.revokedAt).toBe(at(5));
      expect(listed.find((t) => t.id === bystander.id)?.revokedAt).toBeNull();
      expect(await fresh.store.findActiveUserTokensByName('to-revoke')).toEqual([]);
    });

    it('records when a user token was last used', async () => {
      const used = newUserToken('used');
      await fresh.store.createUserToken(used);
      const unused = await fresh.store.createUserToken(newUserToken('unused', { createdAt: at(1) }));

      await fresh.store.markUserTokenUsed(used.id, at(30));
      expect((await fresh.store.findUserTokenByHash(used.tokenHash))?.lastUsedAt).toBe(at(30));
      await fresh.store.markUserTokenUsed(used.id, at(90));
      expect((await fresh.store.listUserTokens()).map((t) => [t.id, t.lastUsedAt])).toEqual([
        [used.id, at(90)],
        [unused.id, null],
      ]);
    });

    it('creates managed tokens and finds them joined with their user token', async () => {
      const owner = newUserToken('owner', { expiresAt: at(7 * 86_400) });
      await fresh.store.createUserToken(owner);
      await fresh.store.createUserToken(newUserToken('someone-else'));
      await fresh.store.markUserTokenUsed(owner.id, at(1));
      const managedHash = hash();
      await fresh.store.createManagedToken(managedHash, owner.id, at(1), at(3601));

      expect(await fresh.store.findManagedToken(managedHash)).toEqual({
        tokenHash: managedHash,
        userTokenId: owner.id,
        expiresAt: at(3601),
        userToken: {
          id: owner.id,
          name: 'owner',
          prefix: owner.prefix,
          createdAt: at(0),
          expiresAt: at(7 * 86_400),
          revokedAt: null,
          lastUsedAt: at(1),
        },
      });
      expect(await fresh.store.findManagedToken(hash())).toBeUndefined();
      // The join reads the user token as it is now, so a revocation shows through at once.
      await fresh.store.revokeUserToken(owner.id, at(2));
      expect((await fresh.store.findManagedToken(managedHash))?.userToken.revokedAt).toBe(at(2));
    });

    it('deletes only the managed tokens that expired before the given time, and says how many', async () => {
      const owner = newUserToken('owner');
      await fresh.store.createUserToken(owner);
      const expired = [hash(), hash()];
      const live = [hash(), hash()];
      await fresh.store.createManagedToken(expired[0], owner.id, at(0), at(100));
      await fresh.store.createManagedToken(expired[1], owner.id, at(0), at(200));
      await fresh.store.createManagedToken(live[0], owner.id, at(0), at(301));
      await fresh.store.createManagedToken(live[1], owner.id, at(0), at(86_400));

      expect(await fresh.store.deleteExpiredManagedTokens(at(300))).toBe(2);
      for (const h of expired) expect(await fresh.store.findManagedToken(h)).toBeUndefined();
      for (const h of live) expect(await fresh.store.findManagedToken(h)).toMatchObject({ tokenHash: h });
      expect(await fresh.store.deleteExpiredManagedTokens(at(300))).toBe(0);
    });

    it('keeps its data across close and reopen', async () => {
      const owner = newUserToken('durable', { expiresAt: at(999) });
      const created = await fresh.store.createUserToken(owner);
      await fresh.store.markUserTokenUsed(owner.id, at(3));
      const managedHash = hash();
      await fresh.store.createManagedToken(managedHash, owner.id, at(3), at(3603));
      await fresh.store.close();

      const reopened = await fresh.place.open();
      expect(await reopened.listUserTokens()).toEqual([{ ...created, lastUsedAt: at(3) }]);
      expect(await reopened.findUserTokenByHash(owner.tokenHash)).toMatchObject({ id: owner.id, tokenHash: owner.tokenHash });
      expect(await reopened.findManagedToken(managedHash)).toMatchObject({ userTokenId: owner.id, expiresAt: at(3603) });
    });
  });
}

// Kysely's own introspector, which the migrations use, read every schema in the database and
// failed ("schema … does not exist") when another client dropped one at the wrong moment: CI
// caught it when two test files made and dropped their schemas at once.
const postgres = storeEngines().find((engine) => engine.name === 'postgres')!;
describe.skipIf(postgres.skip)('postgres store beside other clients', () => {
  it('starts while other clients create and drop schemas in the same database', { timeout: 60_000 }, async () => {
    let stop = false;
    const churn = async () => {
      const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await client.connect();
      try {
        while (!stop) {
          const schema = client.escapeIdentifier(`cutout_churn_${randomBytes(6).toString('hex')}`);
          await client.query(`create schema ${schema}; create table ${schema}.t (id int)`);
          await client.query(`drop schema ${schema} cascade`);
        }
      } finally {
        await client.end();
      }
    };
    const churners = [churn(), churn(), churn()];
    try {
      // Before the fix about a third of these starts failed.
      for (let start = 0; start < 20; start += 1) {
        const place = await postgres.createPlace();
        try {
          const store = await place.open();
          expect(await store.listUserTokens()).toEqual([]);
        } finally {
          await place.dispose();
        }
      }
    } finally {
      stop = true;
      await Promise.all(churners);
    }
  });
});
