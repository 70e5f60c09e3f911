import { TokenService } from './auth/token-service.js';
import type { Config } from './config.js';
import type { Services } from './http/services.js';
import { InferenceQueue } from './inference/inference-queue.js';
import { WebhookSecrets } from './auth/webhook-secrets.js';
import { DrainState } from './lifecycle/drain-state.js';
import { ModelService } from './model/model-service.js';
import { FinishPool } from './pipeline/finish-pool.js';
import { HeicThread } from './pipeline/heic-thread.js';
import { RemovalService } from './removal/removal-service.js';
import type { Store } from './store/store.js';

/** One process's services, and how to free what they hold besides the store. */
export interface ProcessServices {
  services: Services;
  /** Waits for the model runs and finishings in flight, then stops their threads. */
  close(): Promise<void>;
}

/**
 * Makes the long-lived services of one Cutout process around an opened store: `main.ts`
 * and the tests build the app from the same parts. The model is not loaded here
 * (`services.model.load()`); pass `model` to share an already loaded one (tests), which
 * `close` then leaves open. `now` moves the token clock in tests.
 *
 * @example const { services, close } = createServices(config, await openStore(config))
 */
export function createServices(config: Config, store: Store, options: { model?: ModelService; now?: () => Date } = {}): ProcessServices {
  const model =
    options.model ??
    new ModelService({
      dataDir: config.dataDir,
      models: config.models,
      modelPath: config.modelPath,
      threads: config.inferenceThreads,
      instances: config.inferenceConcurrency,
      memoryArena: config.inferenceMemoryArena,
      memoryPattern: config.inferenceMemoryPattern,
      precision: config.modelPrecision,
      executionProvider: config.executionProvider,
    });
  const queue = new InferenceQueue({ concurrency: config.inferenceConcurrency, maxQueued: config.queueMax, jobShare: config.jobMinShare });
  const finisher = new FinishPool({ threads: config.finishThreads });
  const heic = new HeicThread();
  const services: Services = {
    config,
    store,
    tokens: new TokenService(store, { managedTokenTtl: config.managedTokenTtl, now: options.now }),
    model,
    queue,
    removals: new RemovalService({ config, model, queue, finisher, heic }),
    drain: new DrainState(),
    webhookSecrets: new WebhookSecrets(store, { dataDir: config.dataDir, key: config.webhookKey, previousKey: config.webhookKeyPrevious }),
  };
  return {
    services,
    async close() {
      if (!options.model) await model.close();
      await finisher.close();
      await heic.close();
    },
  };
}
