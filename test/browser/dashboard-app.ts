import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { TokenService } from '../../src/auth/token-service.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createServices } from '../../src/create-services.js';
import { ModelService } from '../../src/model/model-service.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { sharedSegmenter } from '../helpers/app.js';

/** One pino line the app wrote. */
export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

export interface DashboardApp {
  app: FastifyInstance;
  config: Config;
  store: Store;
  tokens: TokenService;
  /** Every log line so far: the tests read the setup code from here, as an operator would. */
  logs: LogLine[];
  /** The setup code the app printed at start, if it printed one. */
  setupCode(): string | undefined;
  close(): Promise<void>;
}

/**
 * A Cutout app for the dashboard tests: a fresh SQLite store and no account, the real
 * model, and its log captured (info and up). Not listening; `app.listen({ port: 0 })` for
 * the browser test, `app.inject()` for the others. `dataDir` reopens an existing store.
 */
export async function startDashboardApp(overrides: Partial<Config> = {}, options: { model?: ModelService } = {}): Promise<DashboardApp> {
  const dataDir = overrides.dataDir ?? (await mkdtemp(join(tmpdir(), 'cutout-dashboard-')));
  const config = loadConfig({}, { dataDir, logLevel: 'info', ...overrides });
  const store = await openSqliteStore(dataDir);
  const model = options.model ?? ModelService.ofSegmenter(await sharedSegmenter());
  const { services, close: closeServices } = createServices(config, store, { model });
  const { tokens } = services;
  const logs: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim()) logs.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const app = await buildApp(services, { level: 'info', stream });
  return {
    app,
    config,
    store,
    tokens,
    logs,
    setupCode: () => logs.find((line) => typeof line.setupCode === 'string')?.setupCode as string | undefined,
    async close() {
      await app.close();
      await store.close();
      await closeServices();
      if (!overrides.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
