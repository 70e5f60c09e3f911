import { parseArgs } from 'node:util';
import { TokenService } from '../auth/token-service.js';
import { ConfigError, loadConfig } from '../config.js';
import { AccountInputError, AccountService, normalizeEmail } from '../dashboard/account-service.js';
import { openStore } from '../store/open-store.js';
import { AccountEmailTakenError, TokenNameTakenError, type Account, type UserToken } from '../store/store.js';
import { ModelCatalogError } from '../model/installed-models.js';
import { WebhookSecrets } from '../auth/webhook-secrets.js';
import { BACKUP_USAGE } from './backup-command.js';
import { JOBS_USAGE } from './jobs-command.js';
import { MIGRATE_USAGE } from './migrate-command.js';
import { MODELS_USAGE } from './models-command.js';
import { printTable } from './print-table.js';
import { UsageError } from './usage-error.js';

const USAGE = `Usage:
  cutout remove <files, folders or URLs…> -o OUTDIR [--format webp …]   through a server, over HTTP (cutout remove --help)
${JOBS_USAGE}
  cutout accounts create --email EMAIL    asks for the password (or reads its first line from stdin)
  cutout accounts set-password --email EMAIL   likewise; signs out every dashboard session of the account
  cutout accounts list
  cutout tokens create --name NAME [--expires YYYY-MM-DD] [--account EMAIL]   prints the new Token ID on its last line
  cutout tokens list [--account EMAIL]
  cutout tokens revoke TOKEN_ID_OR_NAME [--account EMAIL]
  cutout webhook-secret --token TOKEN_ID_OR_NAME [--account EMAIL] [--end-earlier]   makes the token's webhook signing
                                          secret and prints it on its last line, this once; the one it replaces signs
                                          beside it for 24 hours, unless --end-earlier (a leaked secret)
${MODELS_USAGE}
${BACKUP_USAGE}
${MIGRATE_USAGE}

--account defaults to the only account (tokens made while there is none go to the first one created).
Uses the same environment as the server (DATABASE_URL, CUTOUT_DATA_DIR, …).`;

function status(token: UserToken, now: string): string {
  if (token.revokedAt) return 'revoked';
  if (token.expiresAt && token.expiresAt <= now) return 'expired';
  return 'active';
}

/**
 * The account a tokens command acts for: the one named by --account, else the only one;
 * null while there is none. Several accounts and no --account is a usage error.
 */
async function resolveAccount(accounts: AccountService, email: string | undefined): Promise<Account | null> {
  const all = await accounts.listAccounts();
  const emails = all.map((account) => account.email).join(', ');
  if (email !== undefined) {
    const found = all.find((account) => account.email === normalizeEmail(email));
    if (!found) throw new UsageError(`no account ${JSON.stringify(email)}${all.length ? ` (accounts: ${emails})` : ' (there is none yet)'}`);
    return found;
  }
  if (all.length > 1) throw new UsageError(`there are ${all.length} accounts; name one with --account EMAIL (${emails})`);
  return all[0] ?? null;
}

/** Reads a line from the terminal without echoing it. */
function promptHidden(question: string): Promise<string> {
  const { stdin, stdout } = process;
  stdout.write(question);
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const done = () => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      stdout.write('\n');
    };
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n' || char === '\u0003' || char === '\u0004') {
          done();
          if (char === '\r' || char === '\n') resolve(value);
          else reject(new UsageError('cancelled'));
          return;
        }
        value = char === '\u007f' || char === '\b' ? value.slice(0, -1) : value + char;
      }
    };
    stdin.on('data', onData);
  });
}

/** A new password: asked twice on a terminal, else the first line of stdin. */
async function readNewPassword(): Promise<string> {
  if (process.stdin.isTTY) {
    const password = await promptHidden('Password: ');
    if ((await promptHidden('Password again: ')) !== password) throw new UsageError('the two passwords differ');
    return password;
  }
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text.split(/\r?\n/)[0];
}

/** `cutout accounts …`: the accounts whose owners sign in to the dashboard. */
async function accountsCommand(args: string[], accounts: AccountService, tokens: TokenService): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { email: { type: 'string' } } });
  const [action] = positionals;
  if (action === 'create') {
    const email = values.email?.trim();
    if (!email) throw new UsageError('accounts create needs --email EMAIL');
    const account = await accounts.createAccount(email, await readNewPassword());
    const owned = (await tokens.listUserTokens(account.id)).length;
    console.log(`Created account ${account.email}; its owner signs in at /dashboard.${owned ? ` It owns the ${owned === 1 ? 'user token' : `${owned} user tokens`} made before.` : ''}`);
  } else if (action === 'set-password') {
    const email = values.email?.trim();
    if (!email) throw new UsageError('accounts set-password needs --email EMAIL');
    // Before asking for the password: an unknown email should not cost the operator a typing.
    const account = await resolveAccount(accounts, email);
    const { endedSessions } = await accounts.setPassword(account!.email, await readNewPassword());
    console.log(`Set a new password for ${account!.email}; signed out ${endedSessions} dashboard session${endedSessions === 1 ? '' : 's'}.`);
  } else if (action === 'list') {
    const all = await accounts.listAccounts();
    if (all.length === 0) console.log('No accounts yet: cutout accounts create --email EMAIL');
    else printTable([['EMAIL', 'CREATED'], ...all.map((account) => [account.email, account.createdAt])]);
  } else {
    throw new UsageError(`unknown accounts action ${JSON.stringify(action ?? '')}`);
  }
}

/** `cutout tokens …`: manages user tokens in the store the server uses. */
async function tokensCommand(args: string[], tokens: TokenService, accounts: AccountService): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { name: { type: 'string' }, expires: { type: 'string' }, account: { type: 'string' } },
  });
  const [action, target] = positionals;
  const account = await resolveAccount(accounts, values.account);
  if (action === 'create') {
    const name = values.name?.trim();
    if (!name) throw new UsageError('tokens create needs --name NAME');
    const expiresAt = values.expires ? new Date(values.expires) : null;
    if (expiresAt && (Number.isNaN(expiresAt.getTime()) || expiresAt <= new Date())) throw new UsageError('--expires must be a date in the future, like 2027-01-31');
    const { tokenId, token } = await tokens.createUserToken(name, expiresAt, account?.id ?? null);
    console.log(`Created user token "${token.name}"${token.expiresAt ? `, expires ${token.expiresAt}` : ''}.`);
    console.log('Its Token ID is shown only this once; exchange it at POST /api/v1/auth/token (header `token`):');
    console.log(tokenId);
  } else if (action === 'list') {
    const now = new Date().toISOString();
    const rows = (await tokens.listUserTokens(account?.id)).map((t) => [t.name, `${t.prefix}…`, t.createdAt, t.expiresAt ?? '-', t.lastUsedAt ?? '-', status(t, now)]);
    if (rows.length === 0) console.log('No user tokens yet: cutout tokens create --name NAME');
    else printTable([['NAME', 'PREFIX', 'CREATED', 'EXPIRES', 'LAST USED', 'STATUS'], ...rows]);
  } else if (action === 'revoke') {
    // A token revoked before this command started was already revoked.
    const startedAt = new Date().toISOString();
    if (!target) throw new UsageError('tokens revoke needs a Token ID or a name');
    const token = await tokens.revokeUserToken(target, account?.id);
    if (!token) throw new UsageError(`no user token matches ${JSON.stringify(target)}`);
    if (token.revokedAt && token.revokedAt < startedAt) console.log(`User token "${token.name}" was already revoked at ${token.revokedAt}.`);
    else console.log(`Revoked user token "${token.name}" (${token.prefix}…); its managed tokens are refused from now on.`);
  } else {
    throw new UsageError(`unknown tokens action ${JSON.stringify(action ?? '')}`);
  }
}

/**
 * `cutout webhook-secret …`: makes a user token's webhook signing secret, as the dashboard's
 * Tokens page does, and prints it once. It needs the server's webhook key: CUTOUT_WEBHOOK_KEY,
 * or the key file of the data directory the server uses.
 */
async function webhookSecretCommand(args: string[], tokens: TokenService, accounts: AccountService, secrets: WebhookSecrets): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { token: { type: 'string' }, account: { type: 'string' }, 'end-earlier': { type: 'boolean' } },
  });
  if (positionals.length > 0) throw new UsageError(`webhook-secret takes no ${JSON.stringify(positionals[0])}; name the token with --token`);
  const target = values.token?.trim();
  if (!target) throw new UsageError('webhook-secret needs --token TOKEN_ID_OR_NAME');
  const account = await resolveAccount(accounts, values.account);
  const token = await tokens.findUserToken(target, account?.id);
  if (!token) throw new UsageError(`no user token matches ${JSON.stringify(target)}`);
  if (token.revokedAt) throw new UsageError(`user token "${token.name}" is revoked`);
  const endEarlier = values['end-earlier'] === true;
  const secret = await secrets.rotate(token.id, { endEarlier });
  if (!secret) throw new UsageError(`no user token matches ${JSON.stringify(target)}`);
  const earlier = endEarlier ? 'the earlier ones no longer sign' : 'for 24 hours with the one it replaced too';
  console.log(`Made a new webhook signing secret for user token "${token.name}"; the webhooks of its jobs are signed with it from now on, ${earlier}.`);
  console.log('It is shown only this once; your receiver checks the webhook-signature header (Standard Webhooks) with it:');
  console.log(secret);
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  if (command !== 'remove' && rest.some((arg) => arg === '--help' || arg === '-h')) {
    console.log(USAGE);
    return 0;
  }
  if (command === 'remove') {
    // An HTTP client of any server: it needs neither the server's configuration nor its store.
    const { removeCommand } = await import('./remove-command.js');
    return removeCommand(rest, process.env, process);
  }
  if (command === 'jobs') {
    const { jobsCommand } = await import('./jobs-command.js');
    return jobsCommand(rest, process.env);
  }
  const config = loadConfig(process.env);
  if (command === 'models') {
    // The data directory's model files only: no store.
    const { modelsCommand } = await import('./models-command.js');
    await modelsCommand(rest, config.dataDir);
    return 0;
  }
  // These open the database themselves, without migrating it: a backup or a status must not
  // change the schema it reports, and a restore replaces the database the store would open.
  if (command === 'backup') {
    const { backupCommand } = await import('./backup-command.js');
    await backupCommand(rest, config);
    return 0;
  }
  if (command === 'restore') {
    const { restoreCommand } = await import('./restore-command.js');
    await restoreCommand(rest, config);
    return 0;
  }
  if (command === 'migrate') {
    const { migrateCommand } = await import('./migrate-command.js');
    return migrateCommand(rest, config);
  }
  const store = await openStore(config);
  try {
    const tokens = new TokenService(store, { managedTokenTtl: config.managedTokenTtl });
    const accounts = new AccountService(store, { sessionTtl: config.sessionTtl });
    if (command === 'tokens') await tokensCommand(rest, tokens, accounts);
    else if (command === 'accounts') await accountsCommand(rest, accounts, tokens);
    else if (command === 'webhook-secret') await webhookSecretCommand(rest, tokens, accounts, new WebhookSecrets(store, { dataDir: config.dataDir, key: config.webhookKey, previousKey: config.webhookKeyPrevious }));
    else throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    return 0;
  } finally {
    await store.close();
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  const known = [UsageError, ConfigError, TokenNameTakenError, AccountInputError, AccountEmailTakenError, ModelCatalogError];
  // node:util's parseArgs refuses an unknown or malformed flag with a TypeError of its own code.
  const badFlag = typeof (error as { code?: unknown }).code === 'string' && (error as { code: string }).code.startsWith('ERR_PARSE_ARGS_');
  if (badFlag || known.some((kind) => error instanceof kind)) {
    console.error(`cutout: ${(error as Error).message}`);
    if (badFlag || error instanceof UsageError) console.error(process.argv[2] === 'remove' ? 'See cutout remove --help.' : USAGE);
    process.exitCode = 2;
  } else {
    console.error(error);
    process.exitCode = 1;
  }
}
