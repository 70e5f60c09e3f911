/**
 * Child process of test/durability.test.ts: creates user tokens one after another, for ever,
 * through the same path as the CLI and the server (`openStore(loadConfig(process.env))`, then
 * TokenService), and prints each Token ID on a line of its own only after `createUserToken`
 * has resolved, that is after the store reported the token committed. The test kills it with
 * SIGKILL at a random moment; every line it printed is a promise that the token is stored.
 *
 * `argv[2]` prefixes the token names, so that rounds on one database never collide.
 */
import { TokenService } from '../../src/auth/token-service.js';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/open-store.js';

const config = loadConfig(process.env);
const tokens = new TokenService(await openStore(config), { managedTokenTtl: config.managedTokenTtl });
const prefix = process.argv[2] ?? `writer-${process.pid}`;

/** Resolves once the line is in the pipe (the kernel's, so it outlives this process). */
const printLine = (line: string) => new Promise<void>((resolve, reject) => process.stdout.write(`${line}\n`, (error) => (error ? reject(error) : resolve())));

for (let i = 0; ; i++) {
  const { tokenId } = await tokens.createUserToken(`${prefix}-${i}`);
  await printLine(tokenId);
}
