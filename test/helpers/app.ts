import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { TokenService } from '../../src/auth/token-service.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createServices } from '../../src/create-services.js';
import { ModelService } from '../../src/model/model-service.js';
import { loadSegmenter, type OnnxSegmenter } from '../../src/model/onnx-segmenter.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { fp32ModelPath, int8ModelPath } from './test-model.js';

let segmenter: Promise<OnnxSegmenter> | undefined;
let fp32Segmenter: Promise<OnnxSegmenter> | undefined;

/** The real bundled model in its int8 form (test-model.ts says why), loaded once per test process. */
export function sharedSegmenter(): Promise<OnnxSegmenter> {
  segmenter ??= int8ModelPath().then((path) => loadSegmenter(path, { threads: 1 }));
  return segmenter;
}

/** The real bundled model in float32, for the tests that keep the float32 path guarded too. */
export function sharedFp32Segmenter(): Promise<OnnxSegmenter> {
  fp32Segmenter ??= fp32ModelPath().then((path) => loadSegmenter(path, { threads: 1 }));
  return fp32Segmenter;
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  store: Store;
  tokens: TokenService;
  /** A fresh managed token for the Authorization header. */
  managedToken(): Promise<string>;
  close(): Promise<void>;
}

/**
 * A Cutout app on a fresh SQLite store with the real model, for `app.inject()`.
 * `now` lets a test move the token clock; `overrides.dataDir` opens another app's store,
 * as a second process would; `options.store` is a store opened elsewhere (PostgreSQL), which
 * the app then owns and closes.
 */
export async function startTestApp(overrides: Partial<Config> = {}, options: { now?: () => Date; model?: ModelService; store?: Store } = {}): Promise<TestApp> {
  const dataDir = overrides.dataDir ?? (await mkdtemp(join(tmpdir(), 'cutout-test-')));
  // One look per image unless a test asks for the fused views: the tests here are about the
  // service around the model, and a second pass per image would double their model time.
  // The views are tested in test/unit/views.test.ts, test/background.test.ts and the quality guard.
  const config = loadConfig({}, { dataDir, logLevel: 'silent', quality: 'fast', ...overrides });
  const store = options.store ?? (await openSqliteStore(dataDir));
  const model = options.model ?? ModelService.ofSegmenter(await sharedSegmenter());
  const { services, close: closeServices } = createServices(config, store, { model, now: options.now });
  const { tokens } = services;
  const app = await buildApp(services);
  const { tokenId } = await tokens.createUserToken(`test-${Math.random().toString(36).slice(2)}`);
  return {
    app,
    config,
    store,
    tokens,
    managedToken: async () => (await tokens.exchange(tokenId)).managedToken,
    async close() {
      await app.close();
      await store.close();
      await closeServices();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
