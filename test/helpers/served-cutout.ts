import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenService } from '../../src/auth/token-service.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { startServer, type LogLine, type ServerProcess } from '../processes/server-process.js';

/** A real Cutout listening on a random port, for the tests of its clients (SDK, CLI, examples). */
export interface ServedCutout {
  server: ServerProcess;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  dataDir: string;
  /** Creates a user token in the server's store, as `cutout tokens create` does, and returns its Token ID. */
  createTokenId(name?: string): Promise<string>;
  /** Revokes a user token by Token ID or name, as `cutout tokens revoke` does. */
  revoke(tokenIdOrName: string): Promise<void>;
  /**
   * Waits until the server's log has the end of request `requestId`. The log arrives through
   * a pipe, later than the answer: after this, every line the request caused has been read.
   */
  logged(requestId: string): Promise<void>;
  /** The requests the server has logged so far (`incoming request`) whose path is `path`. */
  requestsTo(path: string): LogLine[];
  /** The server's `request refused` lines with this code. */
  refusals(code: string): LogLine[];
  close(): Promise<void>;
}

/**
 * Starts `src/main.ts` with the real model on a fresh SQLite store (see
 * test/processes/server-process.ts); `env` adds to the server's environment. The test's
 * own connection to the same store stands in for the operator's CLI.
 */
export async function startServedCutout(env: Record<string, string> = {}): Promise<ServedCutout> {
  const dataDir = await mkdtemp(join(tmpdir(), 'cutout-served-'));
  let store: Store | undefined;
  let server: ServerProcess | undefined;
  try {
    store = await openSqliteStore(dataDir);
    server = await startServer({ CUTOUT_DATA_DIR: dataDir, ...env });
  } catch (error) {
    await store?.close();
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  const tokens = new TokenService(store, { managedTokenTtl: 60 });
  const running = server;
  const openStore = store;
  let named = 0;
  const lines = (match: (line: LogLine) => boolean) => running.logs.filter(match);
  return {
    server: running,
    origin: running.origin,
    dataDir,
    createTokenId: async (name = `client-test-${++named}`) => (await tokens.createUserToken(name)).tokenId,
    async revoke(tokenIdOrName) {
      if (!(await tokens.revokeUserToken(tokenIdOrName))) throw new Error(`no user token ${tokenIdOrName}`);
    },
    async logged(requestId) {
      await running.waitForLog((line) => line.reqId === requestId && line.msg === 'request completed', 10_000);
    },
    requestsTo: (path) => lines((line) => line.msg === 'incoming request' && (line.req as { url?: string } | undefined)?.url === path),
    refusals: (code) => lines((line) => line.msg === 'request refused' && line.code === code),
    async close() {
      if (running.child.exitCode === null && running.child.signalCode === null) {
        running.child.kill('SIGTERM');
        await running.exited;
      }
      await openStore.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
