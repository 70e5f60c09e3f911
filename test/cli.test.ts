import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from './helpers/cli.js';
import { TokenService } from '../src/auth/token-service.js';
import { openSqliteStore } from '../src/store/sqlite-store.js';

const TOKEN_ID = /^cut_user_[A-Za-z0-9_-]{43}$/;
// Each start of the CLI through tsx costs one to two seconds here.
const CLI_TIMEOUT = 30_000;

/** Runs `cutout <args>` from source, on SQLite in `dataDir`, whatever the test's own environment holds. */
const cutout = (dataDir: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> =>
  runCli(args, { env: { CUTOUT_DATA_DIR: dataDir, ...env }, timeoutMs: CLI_TIMEOUT });

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';

describe('cutout --help and bad flags', () => {
  it('--help after any command prints the usage and exits 0; an unknown flag is a usage error (2), not a crash', { timeout: 4 * CLI_TIMEOUT }, async () => {
    for (const command of ['tokens', 'accounts', 'models']) {
      const help = await runCli([command, '--help']);
      expect([help.code, help.stdout], command).toEqual([0, expect.stringContaining('cutout tokens create --name NAME')]);
    }
    const bad = await runCli(['tokens', 'list', '--no-such-flag']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^cutout: Unknown option '--no-such-flag'/);
    expect(bad.stderr).not.toMatch(/\n\s+at /);
  });
});

// The tests below run in order on one data directory, as an operator would type the commands.
describe('cutout tokens', () => {
  let dataDir: string;
  let ciTokenId: string;
  let otherTokenId: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'cutout-cli-'));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('create prints the new Token ID alone on its last line, and that Token ID works', { timeout: 2 * CLI_TIMEOUT }, async () => {
    const configDir = await mkdtemp(join(tmpdir(), 'cutout-cli-config-'));
    // The bad-config run needs no state, so it shares this start-up time.
    const [created, badConfig] = await Promise.all([
      cutout(dataDir, ['tokens', 'create', '--name', 'ci']),
      cutout(join(configDir, 'data'), ['tokens', 'list'], { CUTOUT_MANAGED_TOKEN_TTL: 'abc' }),
    ]);

    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    ciTokenId = lastLine(created.stdout);
    expect(ciTokenId).toMatch(TOKEN_ID);

    const store = await openSqliteStore(dataDir);
    try {
      const grant = await new TokenService(store, { managedTokenTtl: 60 }).exchange(ciTokenId);
      expect(grant.managedToken).toMatch(/^cut_mgd_/);
    } finally {
      await store.close();
    }

    expect(badConfig.code).not.toBe(0);
    expect(badConfig.stderr).toContain('CUTOUT_MANAGED_TOKEN_TTL');
    expect(badConfig.stdout).toBe('');
    // It stopped before touching any data.
    expect(await readdir(configDir)).toEqual([]);
    await rm(configDir, { recursive: true, force: true });
  });

  it('create refuses a name an active token already has, with exit code 2', { timeout: CLI_TIMEOUT }, async () => {
    const again = await cutout(dataDir, ['tokens', 'create', '--name', 'ci']);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already named "ci"');
    expect(again.stdout).not.toContain('cut_user_');
  });

  it('list shows names and prefixes but never a whole Token ID', { timeout: 2 * CLI_TIMEOUT }, async () => {
    const other = await cutout(dataDir, ['tokens', 'create', '--name', 'other']);
    expect(other.code).toBe(0);
    otherTokenId = lastLine(other.stdout);
    expect(otherTokenId).toMatch(TOKEN_ID);

    const listed = await cutout(dataDir, ['tokens', 'list']);
    expect(listed.code).toBe(0);
    const rows = listed.stdout.split('\n');
    const row = (name: string) => rows.find((line) => line.startsWith(`${name} `)) ?? '';
    expect(row('ci')).toContain(ciTokenId.slice(0, 'cut_user_'.length + 4));
    expect(row('ci')).toMatch(/\bactive$/);
    expect(row('other')).toContain(otherTokenId.slice(0, 'cut_user_'.length + 4));
    expect(listed.stdout).not.toContain(ciTokenId);
    expect(listed.stdout).not.toContain(otherTokenId);
    expect(listed.stdout).not.toContain(ciTokenId.slice(-20));
    expect(listed.stdout).not.toContain(otherTokenId.slice(-20));
  });

  it('revoke takes a name or a Token ID, and fails for a name that matches nothing', { timeout: 3 * CLI_TIMEOUT }, async () => {
    const [byName, byTokenId, unknown] = await Promise.all([
      cutout(dataDir, ['tokens', 'revoke', 'ci']),
      cutout(dataDir, ['tokens', 'revoke', otherTokenId]),
      cutout(dataDir, ['tokens', 'revoke', 'nobody']),
    ]);
    expect(byName.code).toBe(0);
    expect(byName.stdout).toContain('Revoked user token "ci"');
    expect(byTokenId.code).toBe(0);
    expect(byTokenId.stdout).toContain('Revoked user token "other"');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('nobody');

    const store = await openSqliteStore(dataDir);
    try {
      const tokens = await store.listUserTokens();
      expect(tokens.map((t) => [t.name, t.revokedAt !== null])).toEqual([
        ['ci', true],
        ['other', true],
      ]);
      await expect(new TokenService(store, { managedTokenTtl: 60 }).exchange(ciTokenId)).rejects.toMatchObject({ code: 'revoked_token' });
    } finally {
      await store.close();
    }
  });
});
