import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TokenService } from '../../src/auth/token-service.js';
import { CutoutError, type ErrorCode } from '../../src/errors.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import type { Store } from '../../src/store/store.js';

// Edges of the token service that test/token-flow.test.ts leaves open: the Authorization
// header's spelling, exact expiry instants, how long expired managed tokens are remembered,
// what a user token's record holds, and revocation within one account.

const TTL = 3600;
const DAY = 86_400;
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

async function refusal(promise: Promise<unknown>): Promise<{ code: ErrorCode; message: string }> {
  const error: unknown = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(CutoutError);
  return { code: (error as CutoutError).code, message: (error as CutoutError).message };
}

let dir: string;
let store: Store;
let tokens: TokenService;
let nowMs: number;
const advance = (seconds: number) => {
  nowMs += seconds * 1000;
};
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

beforeEach(async () => {
  nowMs = T0;
  dir = await mkdtemp(join(tmpdir(), 'cutout-token-mutants-'));
  store = await openSqliteStore(dir);
  tokens = new TokenService(store, { managedTokenTtl: TTL, now: () => new Date(nowMs) });
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

describe('the Authorization header', () => {
  it('takes Bearer in any case, with any whitespace, and the token bare with spaces around', async () => {
    const { tokenId, token } = await tokens.createUserToken('spelling');
    const { managedToken } = await tokens.exchange(tokenId);
    for (const header of [`BEARER ${managedToken}`, `Bearer\t${managedToken}`, `  Bearer   ${managedToken}  `, ` ${managedToken} `]) {
      expect((await tokens.verifyManagedToken(header, undefined)).userTokenId).toBe(token.id);
    }
    // With a managed token in Authorization, a token header beside it does not matter.
    expect((await tokens.verifyManagedToken(managedToken, tokenId)).userTokenId).toBe(token.id);
  });

  it('holding only the word Bearer or spaces is no credential at all', async () => {
    for (const header of ['Bearer', 'bearer   ', '   ', 'Bearer\t']) {
      expect(await refusal(tokens.verifyManagedToken(header, undefined))).toEqual({ code: 'missing_token', message: 'Send a managed token as the Authorization header.' });
      expect((await refusal(tokens.verifyManagedToken(header, 'cut_user_x'))).code).toBe('user_token_not_accepted');
    }
  });

  it('does not strip a Bearer that is not a word of its own', async () => {
    const { managedToken } = await tokens.exchange((await tokens.createUserToken('glued')).tokenId);
    for (const header of [`Bearer${managedToken}`, `xBearer ${managedToken}`, `Bearer Bearer ${managedToken}`]) {
      expect((await refusal(tokens.verifyManagedToken(header, undefined))).code).toBe('invalid_token');
    }
  });

  it('strips Bearer only at the start: a token whose secret ends in Bearer stays whole', async () => {
    const { token } = await tokens.createUserToken('unlucky');
    const managedToken = `cut_mgd_${'A'.repeat(37)}Bearer`;
    await store.createManagedToken(sha256(managedToken), token.id, at(0), at(TTL));
    expect((await tokens.verifyManagedToken(managedToken, undefined)).userTokenId).toBe(token.id);
    expect((await tokens.verifyManagedToken(`Bearer ${managedToken}`, undefined)).userTokenId).toBe(token.id);
  });

  it('says what a managed token looks like, and where to get one', async () => {
    expect(await refusal(tokens.verifyManagedToken('hello', undefined))).toEqual({
      code: 'invalid_token',
      message: 'A managed token starts with cut_mgd_; get one from POST /api/v1/auth/token.',
    });
    expect(await refusal(tokens.verifyManagedToken(`cut_mgd_${'A'.repeat(43)}`, undefined))).toEqual({ code: 'invalid_token', message: 'No such managed token.' });
    expect((await refusal(tokens.verifyManagedToken(`cut_mgd_!${'A'.repeat(43)}`, undefined))).code).toBe('invalid_token');
    expect((await refusal(tokens.verifyManagedToken(`cut_user_${'A'.repeat(43)}`, undefined))).code).toBe('user_token_not_accepted');
  });
});

describe('exchange', () => {
  it('refuses an empty Token ID as missing, and names what a Token ID looks like', async () => {
    expect(await refusal(tokens.exchange(''))).toEqual({ code: 'missing_token', message: 'Send your Token ID in the `token` header.' });
    const { tokenId } = await tokens.createUserToken('shape');
    for (const bad of [`${tokenId}x`, tokenId.slice(0, -1), `cut_user_!${tokenId.slice(-43)}`, `xcut_user_${tokenId.slice(-43)}`, `cut_user_${tokenId.slice(-42)}.`]) {
      expect(await refusal(tokens.exchange(bad))).toEqual({ code: 'invalid_token', message: 'A Token ID starts with cut_user_ followed by 43 characters.' });
    }
    expect(await refusal(tokens.exchange(`cut_user_${'C'.repeat(43)}`))).toEqual({ code: 'invalid_token', message: 'No such Token ID.' });
    const { managedToken } = await tokens.exchange(tokenId);
    expect(await refusal(tokens.exchange(managedToken))).toEqual({
      code: 'invalid_token',
      message: 'This is already a managed token; send it as the Authorization header of a background request.',
    });
  });

  it('stores a user token with its name, display prefix, times and no secret', async () => {
    const expiresAt = new Date(T0 + 7 * DAY * 1000);
    advance(3);
    const { tokenId, token } = await tokens.createUserToken('recorded', expiresAt);
    expect(token).toMatchObject({ name: 'recorded', prefix: tokenId.slice(0, 'cut_user_'.length + 6), createdAt: at(3), expiresAt: expiresAt.toISOString(), revokedAt: null, lastUsedAt: null });
    expect(token.prefix).toHaveLength(15);
    expect((await store.findUserTokenByHash(sha256(tokenId)))?.id).toBe(token.id);
    const forever = await tokens.createUserToken('forever');
    expect(forever.token.expiresAt).toBeNull();
  });

  it('refuses a user token from the instant it expires', async () => {
    const { tokenId } = await tokens.createUserToken('on-the-dot', new Date(T0 + 60_000));
    const { managedToken } = await tokens.exchange(tokenId);
    advance(59.999);
    await tokens.verifyManagedToken(managedToken, undefined);
    await tokens.exchange(tokenId);
    advance(0.001);
    expect(await refusal(tokens.exchange(tokenId))).toEqual({ code: 'expired_token', message: `The user token "on-the-dot" expired at ${at(60)}.` });
    expect((await refusal(tokens.verifyManagedToken(managedToken, undefined))).code).toBe('expired_token');
  });

  it('says when a managed token expired, and remembers it a day, then forgets it', async () => {
    const { tokenId } = await tokens.createUserToken('remembered');
    const old = await tokens.exchange(tokenId);
    advance(TTL);
    expect(await refusal(tokens.verifyManagedToken(old.managedToken, undefined))).toEqual({
      code: 'expired_token',
      message: `The managed token expired at ${at(TTL)}; exchange your Token ID again.`,
    });
    // Each exchange clears out managed tokens that expired more than a day before it.
    advance(DAY);
    await tokens.exchange(tokenId);
    expect((await refusal(tokens.verifyManagedToken(old.managedToken, undefined))).code).toBe('expired_token');
    advance(1);
    const fresh = await tokens.exchange(tokenId);
    expect((await refusal(tokens.verifyManagedToken(old.managedToken, undefined))).code).toBe('invalid_token');
    await tokens.verifyManagedToken(fresh.managedToken, undefined);
  });

  it('uses the real clock when none is given', async () => {
    const clocked = new TokenService(store, { managedTokenTtl: 60 });
    const before = Date.now();
    const { tokenId, token } = await clocked.createUserToken('real-time');
    const grant = await clocked.exchange(tokenId);
    expect(Date.parse(token.createdAt)).toBeGreaterThanOrEqual(before - 1);
    expect(grant.expiresAt.getTime() - before).toBeGreaterThanOrEqual(60_000);
    expect(grant.expiresAt.getTime() - Date.now()).toBeLessThanOrEqual(60_000);
    expect(grant.expiresIn).toBe(60);
    await clocked.verifyManagedToken(grant.managedToken, undefined);
  });
});

describe('a Token ID sent as the key (X-Api-Key)', () => {
  it('is missing when absent, empty or blank, and malformed when not cut_user_ and 43 characters', async () => {
    const missing = { code: 'missing_token', message: 'Send your Token ID as the X-Api-Key header.' };
    for (const key of [undefined, '', '  \t ']) expect(await refusal(tokens.verifyTokenId(key))).toEqual(missing);
    const malformed = { code: 'invalid_token', message: 'A Token ID starts with cut_user_ followed by 43 characters.' };
    const { tokenId } = await tokens.createUserToken('key');
    const { managedToken } = await tokens.exchange(tokenId);
    for (const key of [tokenId.slice(0, -1), `${tokenId}A`, tokenId.replace('cut_user_', 'cut_usr_'), managedToken]) {
      expect(await refusal(tokens.verifyTokenId(key))).toEqual(malformed);
    }
    expect(await refusal(tokens.verifyTokenId(`cut_user_${'C'.repeat(43)}`))).toEqual({ code: 'invalid_token', message: 'No such Token ID.' });
  });

  it("answers a managed token's record for the user token, trimmed of spaces, expiring when it does or never", async () => {
    const expiresAt = new Date(T0 + DAY * 1000);
    const { tokenId, token } = await tokens.createUserToken('dated', expiresAt);
    expect(await tokens.verifyTokenId(` ${tokenId}\t`)).toEqual({ tokenHash: sha256(tokenId), userTokenId: token.id, expiresAt: expiresAt.toISOString(), userToken: { ...token, tokenHash: sha256(tokenId) } });
    const forever = await tokens.createUserToken('undated');
    expect((await tokens.verifyTokenId(forever.tokenId)).expiresAt).toBe('9999-12-31T23:59:59.999Z');
  });

  it('is refused from the instant its user token expires, and once it is revoked', async () => {
    const { tokenId } = await tokens.createUserToken('short', new Date(T0 + 60_000));
    advance(59.999);
    await tokens.verifyTokenId(tokenId);
    advance(0.001);
    expect(await refusal(tokens.verifyTokenId(tokenId))).toEqual({ code: 'expired_token', message: `The user token "short" expired at ${at(60)}.` });
    const revoked = await tokens.createUserToken('revoked');
    await tokens.revokeUserToken(revoked.token.id);
    expect(await refusal(tokens.verifyTokenId(revoked.tokenId))).toEqual({ code: 'revoked_token', message: `The user token "revoked" was revoked at ${at(60)}.` });
  });
});

describe('revocation', () => {
  it('returns an already revoked token unchanged, and says when it was revoked', async () => {
    const { tokenId, token } = await tokens.createUserToken('twice');
    const { managedToken } = await tokens.exchange(tokenId);
    advance(10);
    expect((await tokens.revokeUserToken(token.id))?.revokedAt).toBe(at(10));
    advance(10);
    expect((await tokens.revokeUserToken(tokenId))?.revokedAt).toBe(at(10));
    expect(await refusal(tokens.verifyManagedToken(managedToken, undefined))).toEqual({ code: 'revoked_token', message: `The user token "twice" was revoked at ${at(10)}.` });
  });

  it('matches by name only an active token, and picks the Token ID over a token named like it', async () => {
    const old = await tokens.createUserToken('reused');
    await tokens.revokeUserToken(old.token.id);
    const current = await tokens.createUserToken('reused');
    expect((await tokens.revokeUserToken('reused'))?.id).toBe(current.token.id);

    const target = await tokens.createUserToken('target');
    const decoy = await tokens.createUserToken(target.tokenId);
    expect((await tokens.revokeUserToken(target.tokenId))?.id).toBe(target.token.id);
    expect((await tokens.listUserTokens()).find((t) => t.id === decoy.token.id)?.revokedAt).toBeNull();
  });

  it("within an account, lists and revokes only that account's tokens", async () => {
    const account = (id: string) => store.createAccount({ id, email: `${id}@example.com`, passwordHash: 'x', createdAt: at(0) });
    const a = randomUUID();
    const b = randomUUID();
    await account(a);
    await account(b);
    const ofA = await tokens.createUserToken('mine', null, a);
    const ofB = await tokens.createUserToken('theirs', null, b);
    expect((await tokens.listUserTokens(a)).map((t) => t.id)).toEqual([ofA.token.id]);
    expect((await tokens.listUserTokens()).map((t) => t.id).sort()).toEqual([ofA.token.id, ofB.token.id].sort());

    for (const reference of [ofB.tokenId, ofB.token.id, 'theirs']) expect(await tokens.revokeUserToken(reference, a)).toBeUndefined();
    await tokens.verifyManagedToken((await tokens.exchange(ofB.tokenId)).managedToken, undefined);
    expect((await tokens.revokeUserToken(ofA.token.id, a))?.revokedAt).toBe(at(0));
    expect((await tokens.revokeUserToken('theirs', b))?.id).toBe(ofB.token.id);
  });
});
