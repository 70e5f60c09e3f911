import type { FastifyBaseLogger } from 'fastify';
import { ConfigError, type Config } from '../config.js';
import { AccountEmailTakenError } from '../store/store.js';
import { AccountInputError, normalizeEmail, type AccountService } from './account-service.js';
import type { Store } from '../store/store.js';
import { generateSetupCode, SetupCode } from './setup-code.js';

/**
 * Makes sure a fresh installation can get its first account: creates the
 * CUTOUT_OWNER_EMAIL account if it is configured and missing, and otherwise, while no
 * account exists, prints the setup code in the log. Returns the code (void when an account
 * exists). A bad owner email or password stops the start, naming the variable.
 *
 * Safe when several replicas start at once on one fresh database: the owner account is
 * created once (the others find its email taken), and the setup code is stored, so that the
 * first replica's code is the one all of them print and accept.
 */
export async function prepareFirstAccount(config: Config, accounts: AccountService, store: Store, log: FastifyBaseLogger): Promise<SetupCode> {
  const { ownerEmail, ownerPassword } = config;
  if (ownerEmail !== undefined || ownerPassword !== undefined) {
    if (ownerEmail === undefined || ownerPassword === undefined) {
      throw new ConfigError('CUTOUT_OWNER_EMAIL and CUTOUT_OWNER_PASSWORD go together: set both, or neither to use the setup page.');
    }
    const exists = (await accounts.listAccounts()).some((account) => account.email === normalizeEmail(ownerEmail));
    if (!exists) {
      try {
        const account = await accounts.createAccount(ownerEmail, ownerPassword);
        log.info({ accountId: account.id, email: account.email }, 'created the owner account from CUTOUT_OWNER_EMAIL');
      } catch (error) {
        if (error instanceof AccountInputError) throw new ConfigError(`CUTOUT_OWNER_EMAIL / CUTOUT_OWNER_PASSWORD: ${error.message}`);
        if (!(error instanceof AccountEmailTakenError)) throw error; // another process made it first
      }
    }
  }
  if (await accounts.hasAccounts()) return new SetupCode();
  const code = await store.claimSetupCode(generateSetupCode(), new Date().toISOString());
  log.warn({ setupCode: code }, `No account yet: open /dashboard/setup on this server and enter the setup code ${code}`);
  return new SetupCode(code, (used) => store.consumeSetupCode(used));
}
