import type { JobStore } from './job-records.js';
import type { WebhookStore } from './webhook-records.js';

/** A user token as stored: never the Token ID itself, only its hash and a display prefix. */
export interface UserToken {
  id: string;
  name: string;
  /** The first characters of the Token ID, enough for a person to recognise it. */
  prefix: string;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

/** A managed token joined with the user token it was exchanged for. */
export interface ManagedTokenRecord {
  tokenHash: string;
  userTokenId: string;
  expiresAt: string;
  userToken: UserToken;
}

export interface NewUserToken {
  id: string;
  name: string;
  tokenHash: string;
  prefix: string;
  createdAt: string;
  expiresAt: string | null;
  /** The account the token belongs to; null (or left out) only while no account exists. */
  accountId?: string | null;
}

/** The owner of an account, who signs in to the dashboard. */
export interface Account {
  id: string;
  email: string;
  createdAt: string;
}

export interface NewAccount {
  id: string;
  /** Lower-cased by the caller. */
  email: string;
  passwordHash: string;
  createdAt: string;
}

/** A dashboard session found by its hash, with the account signed in. */
export interface DashboardSession {
  tokenHash: string;
  expiresAt: string;
  account: Account;
}

/** What one background request did, as counted for the dashboard. */
export type RemovalOutcome = 'succeeded' | 'refused' | 'failed';

/** One user token's removals on one UTC day. */
export interface DailyUsage {
  userTokenId: string;
  /** YYYY-MM-DD, UTC. */
  day: string;
  succeeded: number;
  refused: number;
  failed: number;
  megapixels: number;
}

/** Thrown when an account with that email already exists. */
export class AccountEmailTakenError extends Error {
  constructor(email: string, options?: { cause?: unknown }) {
    super(`an account with the email ${email} already exists`, options);
    this.name = 'AccountEmailTakenError';
  }
}

/** Thrown when an active user token already has the name asked for. */
export class TokenNameTakenError extends Error {
  constructor(name: string, options?: { cause?: unknown }) {
    super(`an active token is already named "${name}"`, options);
    this.name = 'TokenNameTakenError';
  }
}

/**
 * Everything Cutout keeps. One implementation over Kysely serves both engines
 * (see `kysely-store.ts`); the adapters only open the connection.
 * Times are ISO 8601 strings in UTC, which sort and compare as text.
 */
export interface Store extends JobStore, WebhookStore {
  createUserToken(token: NewUserToken): Promise<UserToken>;
  /** Oldest first; only one account's when `accountId` is given. */
  listUserTokens(filter?: { accountId?: string }): Promise<UserToken[]>;
  findUserTokenByHash(tokenHash: string): Promise<(UserToken & { tokenHash: string }) | undefined>;
  /** Active (not revoked) tokens whose name is `name`. */
  findActiveUserTokensByName(name: string): Promise<UserToken[]>;
  /** Marks the token revoked; returns false when it was already revoked or does not exist. */
  revokeUserToken(id: string, at: string): Promise<boolean>;
  markUserTokenUsed(id: string, at: string): Promise<void>;
  createManagedToken(tokenHash: string, userTokenId: string, createdAt: string, expiresAt: string): Promise<void>;
  findManagedToken(tokenHash: string): Promise<ManagedTokenRecord | undefined>;
  /** Deletes managed tokens that expired before `before`; returns how many. */
  deleteExpiredManagedTokens(before: string): Promise<number>;

  /**
   * Creates an account. The first account created adopts the user tokens that have none
   * (made before accounts existed). Throws {@link AccountEmailTakenError}.
   */
  createAccount(account: NewAccount): Promise<Account>;
  /** Oldest first. */
  listAccounts(): Promise<Account[]>;
  findAccountByEmail(email: string): Promise<(Account & { passwordHash: string }) | undefined>;
  /**
   * Replaces an account's password hash and deletes every dashboard session of the account,
   * in one transaction: whoever knew the old password is signed out with it. Returns how many
   * sessions were deleted, or undefined when there is no such account.
   */
  setAccountPassword(accountId: string, passwordHash: string): Promise<number | undefined>;
  createDashboardSession(tokenHash: string, accountId: string, createdAt: string, expiresAt: string): Promise<void>;
  findDashboardSession(tokenHash: string): Promise<DashboardSession | undefined>;
  deleteDashboardSession(tokenHash: string): Promise<void>;
  /** Deletes sessions that expired before `before`; returns how many. */
  deleteExpiredDashboardSessions(before: string): Promise<number>;

  /**
   * The installation's setup code: stores `candidate` if there is none yet, and returns the
   * stored one (the candidate, or the code another process stored first).
   */
  claimSetupCode(candidate: string, createdAt: string): Promise<string>;
  /** Deletes the setup code if it is `code`; true only for the one caller that deleted it. */
  consumeSetupCode(code: string): Promise<boolean>;

  /** Counts one background request of a user token on `day` (one upsert). */
  recordRemoval(userTokenId: string, day: string, outcome: RemovalOutcome, megapixels: number): Promise<void>;
  /** Per token and day, for one account's tokens, from `fromDay` on (inclusive). */
  listDailyUsage(accountId: string, fromDay: string): Promise<DailyUsage[]>;
  close(): Promise<void>;
}
