import { UsageError } from './usage-error.js';

// Each command's modules are imported when it runs: `cutout remove` and `cutout jobs`, clients
// of a server over HTTP, start without the configuration schema, the store or the model code.

/** The errors a command reports as a mistake of its user (exit 2), by their names. */
const USER_ERRORS = new Set(['UsageError', 'ConfigError', 'TokenNameTakenError', 'AccountInputError', 'AccountEmailTakenError', 'ModelCatalogError']);

/** The usage text, with each command module's own part. */
async function usage(): Promise<string> {
  const [{ JOBS_USAGE }, { MODELS_USAGE }, { BACKUP_USAGE }, { MIGRATE_USAGE }] = await Promise.all([
    import('./jobs-command.js'),
    import('./models-command.js'),
    import('./backup-command.js'),
    import('./migrate-command.js'),
  ]);
  return `Usage:
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
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    console.log(await usage());
    return command ? 0 : 2;
  }
  if (command !== 'remove' && rest.some((arg) => arg === '--help' || arg === '-h')) {
    console.log(await usage());
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
  const { loadConfig } = await import('../config.js');
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
  const { storeCommand } = await import('./store-commands.js');
  await storeCommand(command, rest, config);
  return 0;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  // node:util's parseArgs refuses an unknown or malformed flag with a TypeError of its own code.
  const badFlag = typeof (error as { code?: unknown }).code === 'string' && (error as { code: string }).code.startsWith('ERR_PARSE_ARGS_');
  if (badFlag || (error instanceof Error && USER_ERRORS.has(error.name))) {
    console.error(`cutout: ${(error as Error).message}`);
    if (badFlag || error instanceof UsageError) console.error(process.argv[2] === 'remove' ? 'See cutout remove --help.' : await usage());
    process.exitCode = 2;
  } else {
    console.error(error);
    process.exitCode = 1;
  }
}
