import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { CutoutError } from '../errors.js';
import type { ManagedTokenRecord, Store, UserToken } from '../store/store.js';

/** Token IDs (user tokens) start with this; a person can tell them from managed tokens at a glance. */
export const USER_TOKEN_PREFIX = 'cut_user_';
/** Managed tokens, the only kind the background endpoints take, start with this. */
export const MANAGED_TOKEN_PREFIX = 'cut_mgd_';

// 32 random bytes, base64url: 43 characters, 256 bits.
const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** Characters of a Token ID kept in clear for display (prefix plus a few of the secret). */
const DISPLAY_PREFIX_LENGTH = USER_TOKEN_PREFIX.length + 6;

const EXPIRED_KEPT_MS = 24 * 3600 * 1000;
/** The expiry of a user token that has none, where a date is needed. */
const NEVER = '9999-12-31T23:59:59.999Z';

const newSecret = (prefix: string) => prefix + randomBytes(32).toString('base64url');

/**
 * SHA-256 of a token. The tokens are 256-bit random secrets, so a fast hash is enough
 * (a slow password hash protects guessable secrets); only hashes are stored.
 */
export const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

function isWellFormed(token: string, prefix: string): boolean {
  return token.startsWith(prefix) && SECRET_PATTERN.test(token.slice(prefix.length));
}

/** Looks a token up by its hash, then compares the hashes in constant time. */
function sameHash(stored: string, candidateHash: string): boolean {
  const a = Buffer.from(stored, 'hex');
  const b = Buffer.from(candidateHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface CreatedUserToken {
  /** The Token ID: shown once, never stored. */
  tokenId: string;
  token: UserToken;
}

export interface ManagedTokenGrant {
  managedToken: string;
  expiresAt: Date;
  expiresIn: number;
}

export interface TokenServiceOptions {
  /** Lifetime of a managed token, in seconds. */
  managedTokenTtl: number;
  now?: () => Date;
}

/**
 * User tokens (created by the owner, exchanged) and managed tokens (sent with every
 * background request): creation, exchange, verification and revocation.
 */
export class TokenService {
  readonly #store: Store;
  readonly #ttl: number;
  readonly #now: () => Date;

  constructor(store: Store, options: TokenServiceOptions) {
    this.#store = store;
    this.#ttl = options.managedTokenTtl;
    this.#now = options.now ?? (() => new Date());
  }

  /**
   * Creates a user token, in `accountId`'s account (none only while no account exists);
   * the returned Token ID is the only copy there will ever be.
   */
  async createUserToken(name: string, expiresAt: Date | null = null, accountId: string | null = null): Promise<CreatedUserToken> {
    const tokenId = newSecret(USER_TOKEN_PREFIX);
    const token = await this.#store.createUserToken({
      id: randomUUID(),
      name,
      tokenHash: hashToken(tokenId),
      prefix: tokenId.slice(0, DISPLAY_PREFIX_LENGTH),
      createdAt: this.#now().toISOString(),
      expiresAt: expiresAt?.toISOString() ?? null,
      accountId,
    });
    return { tokenId, token };
  }

  /** Every user token, or one account's. */
  listUserTokens(accountId?: string): Promise<UserToken[]> {
    return this.#store.listUserTokens({ accountId });
  }

  /**
   * The user token named by its Token ID, its id or its (active) name, or undefined. With
   * `accountId`, only that account's tokens match.
   */
  async findUserToken(tokenIdOrName: string, accountId?: string): Promise<UserToken | undefined> {
    const candidates = await this.#store.listUserTokens({ accountId });
    const byHash = tokenIdOrName.startsWith(USER_TOKEN_PREFIX) ? await this.#store.findUserTokenByHash(hashToken(tokenIdOrName)) : undefined;
    const named = byHash ? undefined : (await this.#store.findActiveUserTokensByName(tokenIdOrName))[0];
    const id = byHash?.id ?? candidates.find((t) => t.id === tokenIdOrName)?.id ?? named?.id;
    return candidates.find((t) => t.id === id);
  }

  /**
   * Revokes a user token named by its Token ID, its id or its (active) name; its managed
   * tokens are refused from then on. Returns the token (its `revokedAt` says when; an
   * already revoked token is returned unchanged), or undefined if nothing matched. With
   * `accountId`, only that account's tokens match.
   */
  async revokeUserToken(tokenIdOrName: string, accountId?: string): Promise<UserToken | undefined> {
    const token = await this.findUserToken(tokenIdOrName, accountId);
    if (!token || token.revokedAt) return token;
    const at = this.#now().toISOString();
    await this.#store.revokeUserToken(token.id, at);
    return { ...token, revokedAt: at };
  }

  /**
   * The token flow: a Token ID (from the `token` header) for a managed token that lives
   * `managedTokenTtl` seconds. Renewal is exchanging again.
   */
  async exchange(tokenId: string | undefined): Promise<ManagedTokenGrant> {
    if (!tokenId) throw new CutoutError('missing_token', 'Send your Token ID in the `token` header.');
    if (tokenId.startsWith(MANAGED_TOKEN_PREFIX)) {
      throw new CutoutError('invalid_token', 'This is already a managed token; send it as the Authorization header of a background request.');
    }
    if (!isWellFormed(tokenId, USER_TOKEN_PREFIX)) throw new CutoutError('invalid_token', `A Token ID starts with ${USER_TOKEN_PREFIX} followed by 43 characters.`);
    const hash = hashToken(tokenId);
    const userToken = await this.#store.findUserTokenByHash(hash);
    if (!userToken || !sameHash(userToken.tokenHash, hash)) throw new CutoutError('invalid_token', 'No such Token ID.');
    const now = this.#now();
    this.#assertUserTokenActive(userToken, now);

    const managedToken = newSecret(MANAGED_TOKEN_PREFIX);
    const expiresAt = new Date(now.getTime() + this.#ttl * 1000);
    await this.#store.createManagedToken(hashToken(managedToken), userToken.id, now.toISOString(), expiresAt.toISOString());
    await this.#store.markUserTokenUsed(userToken.id, now.toISOString());
    // Keep expired tokens a day, so that a client still sending one hears "expired", not "invalid".
    await this.#store.deleteExpiredManagedTokens(new Date(now.getTime() - EXPIRED_KEPT_MS).toISOString());
    return { managedToken, expiresAt, expiresIn: this.#ttl };
  }

  /**
   * Checks the credentials of a background request: `authorization` must hold a live
   * managed token (bare or as `Bearer …`); a Token ID there, or a `token` header, is refused
   * with a hint to exchange it.
   */
  async verifyManagedToken(authorization: string | undefined, tokenHeader: string | undefined): Promise<ManagedTokenRecord> {
    const credential = authorization?.replace(/^\s*Bearer(\s+|$)/i, '').trim();
    if (!credential) {
      if (tokenHeader) throw new CutoutError('user_token_not_accepted');
      throw new CutoutError('missing_token');
    }
    if (credential.startsWith(USER_TOKEN_PREFIX)) throw new CutoutError('user_token_not_accepted');
    if (!isWellFormed(credential, MANAGED_TOKEN_PREFIX)) {
      throw new CutoutError('invalid_token', `A managed token starts with ${MANAGED_TOKEN_PREFIX}; get one from POST /api/v1/auth/token.`);
    }
    const hash = hashToken(credential);
    const record = await this.#store.findManagedToken(hash);
    if (!record || !sameHash(record.tokenHash, hash)) throw new CutoutError('invalid_token', 'No such managed token.');
    const now = this.#now();
    if (record.expiresAt <= now.toISOString()) {
      throw new CutoutError('expired_token', `The managed token expired at ${record.expiresAt}; exchange your Token ID again.`);
    }
    this.#assertUserTokenActive(record.userToken, now);
    return record;
  }

  /**
   * Checks a Token ID sent as the key itself (the remove.bg-compatible routes' `X-Api-Key`):
   * a live user token, refused as the exchange refuses it (unknown, revoked, expired). It can
   * already be exchanged for managed tokens, so taking it directly grants nothing new. The
   * answer has the shape of a managed token's record, which the rate limit and the usage
   * count by; it expires when the user token does.
   */
  async verifyTokenId(tokenId: string | undefined): Promise<ManagedTokenRecord> {
    const key = tokenId?.trim();
    if (!key) throw new CutoutError('missing_token', 'Send your Token ID as the X-Api-Key header.');
    if (!isWellFormed(key, USER_TOKEN_PREFIX)) throw new CutoutError('invalid_token', `A Token ID starts with ${USER_TOKEN_PREFIX} followed by 43 characters.`);
    const hash = hashToken(key);
    const userToken = await this.#store.findUserTokenByHash(hash);
    if (!userToken || !sameHash(userToken.tokenHash, hash)) throw new CutoutError('invalid_token', 'No such Token ID.');
    this.#assertUserTokenActive(userToken, this.#now());
    return { tokenHash: hash, userTokenId: userToken.id, expiresAt: userToken.expiresAt ?? NEVER, userToken };
  }

  #assertUserTokenActive(userToken: UserToken, now: Date): void {
    if (userToken.revokedAt) throw new CutoutError('revoked_token', `The user token "${userToken.name}" was revoked at ${userToken.revokedAt}.`);
    if (userToken.expiresAt && userToken.expiresAt <= now.toISOString()) {
      throw new CutoutError('expired_token', `The user token "${userToken.name}" expired at ${userToken.expiresAt}.`);
    }
  }
}
