/**
 * Child process of test/durability.test.ts: opens a fresh store in each directory given on
 * the command line, one after another, the way the CLI and the server open theirs
 * (`openStore(loadConfig(process.env))`, with CUTOUT_DATA_DIR set to the directory: a first
 * start, so the migrations run). It prints `opening` before the first and `opened <dir>`
 * after each, then stays alive with the stores open.
 *
 * The test kills it with SIGKILL at a random moment: one directory is then left as a first
 * start that died half-way (file created, some migration statements done, or the migration
 * not yet recorded), the ones before it complete, the ones after it untouched.
 */
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/open-store.js';

process.stdout.write('opening\n');
for (const dataDir of process.argv.slice(2)) {
  await openStore(loadConfig({ ...process.env, CUTOUT_DATA_DIR: dataDir }));
  process.stdout.write(`opened ${dataDir}\n`);
}
setInterval(() => {}, 60_000);
