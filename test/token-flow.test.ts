import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TokenService } from '../src/auth/token-service.js';
import { CutoutError, type ErrorCode } from '../src/errors.js';
import type { Store } from '../src/store/store.js';
import { storeEngines, type StorePlace } from './helpers/stores.js';

const TTL = 3600;
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const USER_TOKEN_ID = /^cut_user_[A-Za-z0-9_-]{43}$/;
const MANAGED_TOKEN = /^cut_mgd_[A-Za-z0-9_-]{43}$/;

// Computed here rather than imported, so that a change to what the service stores shows up.
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Awaits `promise` and checks that it failed with a CutoutError of this code. */
async function expectRefused(promise: Promise<unknown>, code: ErrorCode): Promise<CutoutError> {
  const error: unknown = await promise.then(
    (value) => ({ resolvedWith: value }),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(CutoutError);
  expect((error as CutoutError).code).toBe(code);
  return error as CutoutError;
}

for (const engine of storeEngines()) {
  describe.skipIf(engine.skip)(`token flow on ${engine.name}`, () => {
    let place: StorePlace;
    let store: Store;
    let tokens: TokenService;
    let nowMs: number;
    /** Moves the injected clock forward. */
    const advance = (seconds: number) => {
      nowMs += seconds * 1000;
    };

    beforeEach(async () => {
      nowMs = T0;
      place = await engine.createPlace();
      store = await place.open();
      tokens = new TokenService(store, { managedTokenTtl: TTL, now: () => new Date(nowMs) });
    });
    afterEach(async () => {
      await place?.dispose();
    });

    it('makes long random Token IDs starting with cut_user_ and managed tokens starting with cut_mgd_', async () => {
      const a = await tokens.createUserToken('a');
      const b = await tokens.createUserToken('b');
      expect(a.tokenId).toMatch(USER_TOKEN_ID);
      expect(b.tokenId).toMatch(USER_TOKEN_ID);
      expect(a.tokenId).not.toBe(b.tokenId);
      // The display prefix is the start of the Token ID, and short of the whole secret.
      expect(a.tokenId.startsWith(a.token.prefix)).toBe(true);
      expect(a.token.prefix.length).toBeLessThan(20);

      const first = await tokens.exchange(a.tokenId);
      const second = await tokens.exchange(a.tokenId);
      expect(first.managedToken).toMatch(MANAGED_TOKEN);
      expect(second.managedToken).toMatch(MANAGED_TOKEN);
      expect(first.managedToken).not.toBe(second.managedToken);
    });

    it('stores only the SHA-256 hashes of Token IDs and managed tokens', async () => {
      const { tokenId, token } = await tokens.createUserToken('secret-keeper');
      const { managedToken } = await tokens.exchange(tokenId);
      await store.close();

      const raw = await place.rawContents();
      // The hashes are there, so this is where the tokens would be if they leaked.
      expect(raw).toContain(sha256(tokenId));
      expect(raw).toContain(sha256(managedToken));
      expect(raw).toContain(token.prefix);
      expect(raw).not.toContain(tokenId);
      expect(raw).not.toContain(tokenId.slice(token.prefix.length));
      expect(raw).not.toContain(managedToken);
      expect(raw).not.toContain(managedToken.slice('cut_mgd_'.length));
    });

    it('exchanges a Token ID for a managed token that lives managedTokenTtl seconds from now', async () => {
      const { tokenId, token } = await tokens.createUserToken('exchanger');
      advance(42);
      const grant = await tokens.exchange(tokenId);

      expect(grant.expiresAt.toISOString()).toBe(new Date(T0 + (42 + TTL) * 1000).toISOString());
      expect(grant.expiresIn).toBe(TTL);
      const record = await store.findManagedToken(sha256(grant.managedToken));
      expect(record).toMatchObject({ userTokenId: token.id, expiresAt: grant.expiresAt.toISOString() });
      expect((await store.findUserTokenByHash(sha256(tokenId)))?.lastUsedAt).toBe(new Date(T0 + 42_000).toISOString());
    });

    it('accepts a managed token bare and as Bearer, and tells which user token it belongs to', async () => {
      const { tokenId, token } = await tokens.createUserToken('verifier');
      const { managedToken } = await tokens.exchange(tokenId);

      const bare = await tokens.verifyManagedToken(managedToken, undefined);
      expect(bare).toMatchObject({ tokenHash: sha256(managedToken), userTokenId: token.id, userToken: { id: token.id, name: 'verifier' } });
      expect((await tokens.verifyManagedToken(`Bearer ${managedToken}`, undefined)).userTokenId).toBe(token.id);
      expect((await tokens.verifyManagedToken(`bearer  ${managedToken}`, undefined)).userTokenId).toBe(token.id);
    });

    describe('refuses a background request', () => {
      let tokenId: string;
      let managedToken: string;
      beforeEach(async () => {
        ({ tokenId } = await tokens.createUserToken('refusals'));
        ({ managedToken } = await tokens.exchange(tokenId));
      });

      it('with no credentials: missing_token', async () => {
        await expectRefused(tokens.verifyManagedToken(undefined, undefined), 'missing_token');
        await expectRefused(tokens.verifyManagedToken('', undefined), 'missing_token');
      });

      it('with a Token ID in Authorization: user_token_not_accepted', async () => {
        await expectRefused(tokens.verifyManagedToken(tokenId, undefined), 'user_token_not_accepted');
        await expectRefused(tokens.verifyManagedToken(`Bearer ${tokenId}`, undefined), 'user_token_not_accepted');
      });

      it('with only a token header: user_token_not_accepted', async () => {
        await expectRefused(tokens.verifyManagedToken(undefined, tokenId), 'user_token_not_accepted');
      });

      it('with a malformed managed token: invalid_token', async () => {
        for (const bad of ['hello', 'cut_mgd_short', `${managedToken}x`, managedToken.slice(0, -1), `cut_mgd_${'!'.repeat(43)}`]) {
          await expectRefused(tokens.verifyManagedToken(bad, undefined), 'invalid_token');
        }
      });

      it('with a well-formed but unknown managed token: invalid_token', async () => {
        const unknown = `cut_mgd_${'A'.repeat(43)}`;
        expect(unknown).toMatch(MANAGED_TOKEN);
        await expectRefused(tokens.verifyManagedToken(unknown, undefined), 'invalid_token');
      });

      it('once the managed token has expired: expired_token', async () => {
        advance(TTL - 1);
        await tokens.verifyManagedToken(managedToken, undefined);
        advance(1);
        await expectRefused(tokens.verifyManagedToken(managedToken, undefined), 'expired_token');
        advance(86_400);
        await expectRefused(tokens.verifyManagedToken(`Bearer ${managedToken}`, undefined), 'expired_token');
      });
    });

    it.each([
      ['its Token ID', (created: { tokenId: string; token: { id: string; name: string } }) => created.tokenId],
      ['its name', (created: { tokenId: string; token: { id: string; name: string } }) => created.token.name],
      ['its id', (created: { tokenId: string; token: { id: string; name: string } }) => created.token.id],
    ])('revoking a user token by %s refuses its managed tokens and further exchanges: revoked_token', async (_, reference) => {
      const created = await tokens.createUserToken('doomed');
      const bystander = await tokens.createUserToken('bystander');
      const grants = [await tokens.exchange(created.tokenId), await tokens.exchange(created.tokenId)];
      const bystanderGrant = await tokens.exchange(bystander.tokenId);
      advance(5);

      const revoked = await tokens.revokeUserToken(reference(created));
      expect(revoked).toMatchObject({ id: created.token.id, name: 'doomed', revokedAt: new Date(T0 + 5000).toISOString() });

      for (const { managedToken } of grants) await expectRefused(tokens.verifyManagedToken(managedToken, undefined), 'revoked_token');
      await expectRefused(tokens.exchange(created.tokenId), 'revoked_token');
      // Only that token: another user token's managed token still works.
      expect((await tokens.verifyManagedToken(bystanderGrant.managedToken, undefined)).userTokenId).toBe(bystander.token.id);
    });

    it('revoking something that matches no user token changes nothing', async () => {
      const { tokenId } = await tokens.createUserToken('survivor');
      const { managedToken } = await tokens.exchange(tokenId);
      expect(await tokens.revokeUserToken('nobody')).toBeUndefined();
      expect(await tokens.revokeUserToken(`cut_user_${'B'.repeat(43)}`)).toBeUndefined();
      await tokens.verifyManagedToken(managedToken, undefined);
    });

    it('refuses to exchange a user token whose own expiry has passed: expired_token', async () => {
      const { tokenId } = await tokens.createUserToken('short-lived', new Date(T0 + 60_000));
      const { managedToken } = await tokens.exchange(tokenId);
      advance(61);
      await expectRefused(tokens.exchange(tokenId), 'expired_token');
      // Its managed token, though within its own TTL, goes with it.
      await expectRefused(tokens.verifyManagedToken(managedToken, undefined), 'expired_token');

      const { tokenId: alreadyExpired } = await tokens.createUserToken('born-expired', new Date(nowMs - 1000));
      await expectRefused(tokens.exchange(alreadyExpired), 'expired_token');
    });

    it('refuses to exchange a missing, malformed, unknown or managed token', async () => {
      const { tokenId } = await tokens.createUserToken('exchange-refusals');
      const { managedToken } = await tokens.exchange(tokenId);
      await expectRefused(tokens.exchange(undefined), 'missing_token');
      await expectRefused(tokens.exchange(managedToken), 'invalid_token');
      await expectRefused(tokens.exchange('cut_user_tooshort'), 'invalid_token');
      await expectRefused(tokens.exchange(`cut_user_${'C'.repeat(43)}`), 'invalid_token');
    });

    it('renews by exchanging again: a different managed token, and both work until each expires', async () => {
      const { tokenId } = await tokens.createUserToken('renewer');
      const first = await tokens.exchange(tokenId);
      advance(TTL / 2);
      const second = await tokens.exchange(tokenId);

      expect(second.managedToken).not.toBe(first.managedToken);
      expect(second.expiresAt.getTime() - first.expiresAt.getTime()).toBe((TTL / 2) * 1000);
      await tokens.verifyManagedToken(first.managedToken, undefined);
      await tokens.verifyManagedToken(second.managedToken, undefined);

      advance(TTL / 2);
      await expectRefused(tokens.verifyManagedToken(first.managedToken, undefined), 'expired_token');
      await tokens.verifyManagedToken(second.managedToken, undefined);

      advance(TTL / 2);
      await expectRefused(tokens.verifyManagedToken(second.managedToken, undefined), 'expired_token');
    });
  });
}
