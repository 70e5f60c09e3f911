import fp from 'fastify-plugin';
import type { TokenService } from '../auth/token-service.js';
import type { Config } from '../config.js';
import type { InferenceQueue } from '../inference/inference-queue.js';
import type { WebhookSecrets } from '../auth/webhook-secrets.js';
import type { DrainState } from '../lifecycle/drain-state.js';
import type { ModelService } from '../model/model-service.js';
import type { RemovalService } from '../removal/removal-service.js';
import type { Store } from '../store/store.js';

/** The long-lived parts one Cutout process shares between requests. */
export interface Services {
  config: Config;
  store: Store;
  tokens: TokenService;
  model: ModelService;
  queue: InferenceQueue;
  removals: RemovalService;
  /** Set on SIGTERM: `/readyz` then answers 503 while the process finishes its work. */
  drain: DrainState;
  /** User tokens' webhook signing secrets: rotated by the dashboard, derived by the webhook sender. */
  webhookSecrets: WebhookSecrets;
}

declare module 'fastify' {
  interface FastifyInstance extends Services {}
}

/**
 * Decorates the instance with the shared services, once; the other plugins declare it as
 * a dependency (`dependencies: ['cutout-services']`).
 */
export const servicesPlugin = fp<Services>(
  async (app, services) => {
    for (const [name, service] of Object.entries(services)) app.decorate(name, service);
  },
  { name: 'cutout-services' },
);
