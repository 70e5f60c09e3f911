import { parseArgs } from 'node:util';
import { TokenService } from '../auth/token-service.js';
import { WebhookSecrets } from '../auth/webhook-secrets.js';
import type { Config } from '../config.js';
import { AccountService, normalizeEmail } from '../dashboard/account-service.js';
import { openStore } from '../store/open-store.js';
import type { Account, UserToken } from '../store/store.js';
import { printTable } from './print-table.js';
import { UsageError } from './usage-error.js';

// The commands that act on the store the server uses: `cutout accounts`, `cutout tokens` and
// `cutout webhook-secret`. main.ts loads this module only for them, so that the commands that
// need no store (`remove`, `jobs`, `models`, …) start without it.

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


/** Runs `cutout tokens|accounts|webhook-secret` on the store `config` names. */
export async function storeCommand(command: string, args: string[], config: Config): Promise<void> {
  const store = await openStore(config);
  try {
    const tokens = new TokenService(store, { managedTokenTtl: config.managedTokenTtl });
    const accounts = new AccountService(store, { sessionTtl: config.sessionTtl });
    if (command === 'tokens') await tokensCommand(args, tokens, accounts);
    else if (command === 'accounts') await accountsCommand(args, accounts, tokens);
    else if (command === 'webhook-secret') await webhookSecretCommand(args, tokens, accounts, new WebhookSecrets(store, { dataDir: config.dataDir, key: config.webhookKey, previousKey: config.webhookKeyPrevious }));
    else throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  } finally {
    await store.close();
  }
}
