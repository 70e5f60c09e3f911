import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Account, DashboardSession, Store } from '../store/store.js';
import { hashPassword, passwordProblem, verifyPassword } from './passwords.js';

/** A new account's email or password was refused; the message is meant for the person typing. */
export class AccountInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AccountInputError';
  }
}

// Deliberately loose: one @, something on each side, a dot in the domain, no spaces.
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Emails compare case-insensitively; they are stored trimmed and lower-cased. */
export const normalizeEmail = (email: string) => email.trim().toLowerCase();

/** Why an account cannot be created with this email and password, or undefined when it can. */
export function newAccountProblem(email: string, password: string): string | undefined {
  const normalized = normalizeEmail(email);
  if (!EMAIL.test(normalized) || normalized.length > 254) return 'Enter an email address such as owner@example.com.';
  return passwordProblem(password);
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export interface AccountServiceOptions {
  /** Lifetime of a dashboard session, in seconds. */
  sessionTtl: number;
  now?: () => Date;
}

/** A session just started: the secret goes in the cookie, only its hash in the store. */
export interface StartedSession {
  secret: string;
  expiresAt: Date;
}

/**
 * Accounts and their owners' dashboard sessions: creation, password sign-in, sessions by
 * cookie secret. Passwords are kept only as scrypt hashes, session secrets as SHA-256.
 */
export class AccountService {
  readonly #store: Store;
  readonly #sessionTtl: number;
  readonly #now: () => Date;
  /** Verified against when the email is unknown, so that sign-in takes as long either way. */
  #decoyHash: Promise<string> | undefined;

  constructor(store: Store, options: AccountServiceOptions) {
    this.#store = store;
    this.#sessionTtl = options.sessionTtl;
    this.#now = options.now ?? (() => new Date());
  }

  /** Creates an account for `email`; throws {@link AccountInputError} for a bad email or a weak password. */
  async createAccount(email: string, password: string): Promise<Account> {
    const problem = newAccountProblem(email, password);
    if (problem) throw new AccountInputError(problem);
    return this.#store.createAccount({ id: randomUUID(), email: normalizeEmail(email), passwordHash: await hashPassword(password), createdAt: this.#now().toISOString() });
  }

  /**
   * Gives the account with this email a new password and signs out every session of it.
   * Throws {@link AccountInputError} for an unknown email or a weak password; returns the
   * account and how many sessions were ended.
   *
   * @example await accounts.setPassword('owner@example.com', 'a new long password') // { account, endedSessions: 2 }
   */
  async setPassword(email: string, password: string): Promise<{ account: Account; endedSessions: number }> {
    const found = await this.#store.findAccountByEmail(normalizeEmail(email));
    if (!found) throw new AccountInputError(`There is no account ${JSON.stringify(email)}.`);
    const problem = passwordProblem(password);
    if (problem) throw new AccountInputError(problem);
    const endedSessions = await this.#store.setAccountPassword(found.id, await hashPassword(password));
    if (endedSessions === undefined) throw new AccountInputError(`There is no account ${JSON.stringify(email)}.`);
    return { account: { id: found.id, email: found.email, createdAt: found.createdAt }, endedSessions };
  }

  listAccounts(): Promise<Account[]> {
    return this.#store.listAccounts();
  }

  async hasAccounts(): Promise<boolean> {
    return (await this.#store.listAccounts()).length > 0;
  }

  /** The account whose owner this is, or undefined; takes the same time whether the email exists or not. */
  async authenticate(email: string, password: string): Promise<Account | undefined> {
    const found = await this.#store.findAccountByEmail(normalizeEmail(email));
    if (!found) {
      this.#decoyHash ??= hashPassword(randomBytes(16).toString('hex'));
      await verifyPassword(password, await this.#decoyHash);
      return undefined;
    }
    if (!(await verifyPassword(password, found.passwordHash))) return undefined;
    return { id: found.id, email: found.email, createdAt: found.createdAt };
  }

  /** Starts a session for `accountId` and clears out sessions that have expired. */
  async startSession(accountId: string): Promise<StartedSession> {
    const secret = randomBytes(32).toString('base64url');
    const now = this.#now();
    const expiresAt = new Date(now.getTime() + this.#sessionTtl * 1000);
    await this.#store.createDashboardSession(sha256(secret), accountId, now.toISOString(), expiresAt.toISOString());
    await this.#store.deleteExpiredDashboardSessions(now.toISOString());
    return { secret, expiresAt };
  }

  /** The live session whose cookie secret this is, or undefined (unknown or expired). */
  async findSession(secret: string | undefined): Promise<DashboardSession | undefined> {
    if (!secret || secret.length > 100) return undefined;
    const session = await this.#store.findDashboardSession(sha256(secret));
    if (!session || session.expiresAt <= this.#now().toISOString()) return undefined;
    return session;
  }

  async endSession(secret: string): Promise<void> {
    await this.#store.deleteDashboardSession(sha256(secret));
  }
}
