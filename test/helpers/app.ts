import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { TokenService } from '../../src/auth/token-service.js';
import { loadConfig, type Config } from '../../src/config.js';
import { buildApp } from '../../src/http/app.js';
import { InferenceQueue } from '../../src/inference/inference-queue.js';
import { assembleModel } from '../../src/model/assemble-model.js';
import { ModelService } from '../../src/model/model-service.js';
import { Refiner } from '../../src/pipeline/refine.js';
import { loadSegmenter, type Segmenter } from '../../src/model/onnx-segmenter.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';

let segmenter: Promise<Segmenter> | undefined;

/** The real bundled model, loaded once per test process. */
export function sharedSegmenter(): Promise<Segmenter> {
  segmenter ??= assembleModel(join(tmpdir(), 'cutout-test-model')).then((path) => loadSegmenter(path, { threads: 1 }));
  return segmenter;
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  tokens: TokenService;
  /** A fresh managed token for the Authorization header. */
  managedToken(): Promise<string>;
  close(): Promise<void>;
}

/**
 * A Cutout app on a fresh SQLite store with the real model, for `app.inject()`.
 * `now` lets a test move the token clock; `overrides.dataDir` opens another app's store,
 * as a second process would.
 */
export async function startTestApp(overrides: Partial<Config> = {}, options: { now?: () => Date; model?: ModelService } = {}): Promise<TestApp> {
  const dataDir = overrides.dataDir ?? (await mkdtemp(join(tmpdir(), 'cutout-test-')));
  const config = loadConfig({}, { dataDir, logLevel: 'silent', ...overrides });
  const store = await openSqliteStore(dataDir);
  const tokens = new TokenService(store, { managedTokenTtl: config.managedTokenTtl, now: options.now });
  const model = options.model ?? ModelService.ofSegmenter(await sharedSegmenter());
  const queue = new InferenceQueue({ concurrency: config.inferenceConcurrency, maxQueued: config.queueMax });
  const refiner = new Refiner();
  const app = await buildApp({ config, store, tokens, model, queue, refiner });
  const { tokenId } = await tokens.createUserToken(`test-${Math.random().toString(36).slice(2)}`);
  return {
    app,
    config,
    tokens,
    managedToken: async () => (await tokens.exchange(tokenId)).managedToken,
    async close() {
      await app.close();
      await store.close();
      await refiner.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
