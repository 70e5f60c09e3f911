import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from './helpers/cli.js';
import { AccountService } from '../src/dashboard/account-service.js';
import { openSqliteStore } from '../src/store/sqlite-store.js';

// The ceiling of one CLI run (tsx starts it from source); a test gets one per run it makes.
const CLI_TIMEOUT = 30_000;
const PASSWORD = 'a password for the cli';

/** Runs `cutout <args>` from source on SQLite in `dataDir`, with `input` on stdin. */
const cutout = (dataDir: string, args: string[], input = ''): Promise<CliResult> => runCli(args, { env: { CUTOUT_DATA_DIR: dataDir }, input, timeoutMs: CLI_TIMEOUT });

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';

// In order, on one data directory, as an operator would type them.
describe('cutout accounts, and tokens --account', () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cutout-cli-accounts-'));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('a token made before any account goes to the first account, created with the password from stdin', { timeout: 4 * CLI_TIMEOUT }, async () => {
    const early = await cutout(dataDir, ['tokens', 'create', '--name', 'early']);
    expect(early.code, early.stderr).toBe(0);
    const short = await cutout(dataDir, ['accounts', 'create', '--email', 'owner@example.com'], 'short\n');
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('at least 10 characters');

    const created = await cutout(dataDir, ['accounts', 'create', '--email', 'Owner@Example.com'], `${PASSWORD}\nignored second line\n`);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('Created account owner@example.com');
    expect(created.stdout).toContain('It owns the user token made before.');
    expect(created.stdout + created.stderr).not.toContain(PASSWORD);

    const store = await openSqliteStore(dataDir);
    try {
      const accounts = new AccountService(store, { sessionTtl: 60 });
      expect(await accounts.authenticate('owner@example.com', PASSWORD)).toMatchObject({ email: 'owner@example.com' });
      expect(await accounts.authenticate('owner@example.com', 'ignored second line')).toBeUndefined();
    } finally {
      await store.close();
    }
    const again = await cutout(dataDir, ['accounts', 'create', '--email', 'owner@example.com'], `${PASSWORD}\n`);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already exists');
  });

  it('with one account, tokens go to it; with two, --account is required and scopes every command', { timeout: 10 * CLI_TIMEOUT }, async () => {
    // One after the other: run together, the second account could exist before the token is made.
    const single = await cutout(dataDir, ['tokens', 'create', '--name', 'single']);
    const second = await cutout(dataDir, ['accounts', 'create', '--email', 'second@example.com'], `${PASSWORD}\n`);
    expect(single.code, single.stderr).toBe(0);
    expect(second.code, second.stderr).toBe(0);

    const [ambiguous, own, listed, unknown] = await Promise.all([
      cutout(dataDir, ['tokens', 'list']),
      cutout(dataDir, ['tokens', 'create', '--name', 'theirs', '--account', 'second@example.com']),
      cutout(dataDir, ['accounts', 'list']),
      cutout(dataDir, ['tokens', 'list', '--account', 'nobody@example.com']),
    ]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('there are 2 accounts; name one with --account EMAIL (owner@example.com, second@example.com)');
    expect(own.code, own.stderr).toBe(0);
    expect(lastLine(own.stdout)).toMatch(/^cut_user_/);
    expect(listed.stdout).toMatch(/^EMAIL +CREATED\nowner@example\.com +\S+\nsecond@example\.com +\S+\n$/);
    expect(unknown.code).toBe(2);

    const [ownerList, secondList, crossRevoke] = await Promise.all([
      cutout(dataDir, ['tokens', 'list', '--account', 'owner@example.com']),
      cutout(dataDir, ['tokens', 'list', '--account', 'second@example.com']),
      cutout(dataDir, ['tokens', 'revoke', 'theirs', '--account', 'owner@example.com']),
    ]);
    const names = (stdout: string) => stdout.trim().split('\n').slice(1).map((line) => line.split(/\s+/)[0]);
    expect(names(ownerList.stdout)).toEqual(['early', 'single']);
    expect(names(secondList.stdout)).toEqual(['theirs']);
    expect(crossRevoke.code).toBe(2);
    expect(crossRevoke.stderr).toContain('no user token matches "theirs"');

    const revoked = await cutout(dataDir, ['tokens', 'revoke', 'theirs', '--account', 'second@example.com']);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain('Revoked user token "theirs"');
  });

  it('set-password gives the account a new password from stdin and signs out every session of it, and only of it', { timeout: 3 * CLI_TIMEOUT }, async () => {
    const NEW_PASSWORD = 'a brand new password';
    let store = await openSqliteStore(dataDir);
    const accounts = new AccountService(store, { sessionTtl: 3600 });
    const [laptop, phone] = [await accounts.startSession((await accounts.authenticate('owner@example.com', PASSWORD))!.id), await accounts.startSession((await accounts.authenticate('owner@example.com', PASSWORD))!.id)];
    const theirs = await accounts.startSession((await accounts.authenticate('second@example.com', PASSWORD))!.id);
    await store.close();

    const [unknown, weak] = await Promise.all([
      cutout(dataDir, ['accounts', 'set-password', '--email', 'nobody@example.com'], `${NEW_PASSWORD}\n`),
      cutout(dataDir, ['accounts', 'set-password', '--email', 'owner@example.com'], 'short\n'),
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no account "nobody@example.com"');
    expect(weak.code).toBe(2);
    expect(weak.stderr).toContain('at least 10 characters');

    const set = await cutout(dataDir, ['accounts', 'set-password', '--email', 'Owner@Example.com'], `${NEW_PASSWORD}\nignored\n`);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toBe('Set a new password for owner@example.com; signed out 2 dashboard sessions.\n');
    expect(set.stdout + set.stderr).not.toContain(NEW_PASSWORD);

    store = await openSqliteStore(dataDir);
    try {
      const after = new AccountService(store, { sessionTtl: 3600 });
      expect(await after.authenticate('owner@example.com', PASSWORD)).toBeUndefined();
      expect(await after.authenticate('owner@example.com', NEW_PASSWORD)).toMatchObject({ email: 'owner@example.com' });
      expect(await after.findSession(laptop.secret)).toBeUndefined();
      expect(await after.findSession(phone.secret)).toBeUndefined();
      expect(await after.findSession(theirs.secret)).toMatchObject({ account: { email: 'second@example.com' } });
    } finally {
      await store.close();
    }
  });
});
