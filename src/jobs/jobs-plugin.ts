import fp from 'fastify-plugin';
import { FleetRunner, type RecoveryKind } from './fleet-runner.js';
import { FleetUpkeep } from './fleet-upkeep.js';
import { JobRunner } from './job-runner.js';
import { jobRoutes } from './job-routes.js';
import { JobService } from './job-service.js';
import { JobSweeper } from './job-sweeper.js';
import type { JobWork } from './job-work.js';
import { webhookAddressRules } from './webhook-address.js';
import { WebhookSender } from './webhook-sender.js';

/** The jobs' long-lived parts, for the routes (the API's and the dashboard's) and for tests. */
export interface Jobs {
  runner: JobWork;
  sweeper: JobSweeper;
  webhooks: WebhookSender;
  /** Makes, cancels and zips jobs for whichever route asks. */
  service: JobService;
}

declare module 'fastify' {
  interface FastifyInstance {
    jobs: Jobs;
  }
}

/**
 * Jobs: the routes, the runner that works through the items with the capacity the removal
 * endpoints leave idle, and the sweeper that deletes expired jobs. On one node (no
 * REDIS_URL) the runner is the embedded one, reading the store, and the sweeper keeps its own
 * time; with REDIS_URL the items go through BullMQ (`fleet-runner.ts`), and reconciliation
 * and sweeps run on BullMQ job schedulers, one replica at a time (`fleet-upkeep.ts`).
 * The runner and the sweeper start once the app is ready and stop when it closes, before
 * the store.
 *
 * @example await app.register(jobsPlugin)
 */
export const jobsPlugin = fp(
  async (app) => {
    const { config, store, removals, queue, model, drain, redis, webhookSecrets } = app;
    const log = app.log.child({ component: 'jobs' });
    const onItemEnd = (state: 'succeeded' | 'failed', code?: string) => app.metrics?.countJobItem(state, code);
    const { redisUrl } = config;
    const sweeper = new JobSweeper({ store, dataDir: config.dataDir, retentionSeconds: config.jobRetention, log });
    let runner: JobWork;
    let upkeep: FleetUpkeep | undefined;
    if (redis && redisUrl) {
      const onRecovery = (kind: RecoveryKind, items: number) => app.metrics?.countJobRecovery(kind, items);
      const fleet = new FleetRunner({ config: { ...config, redisUrl }, store, removals, queue, model, drain, redis, log, onItemEnd, onRecovery });
      upkeep = new FleetUpkeep({ config: { ...config, redisUrl }, runner: fleet, sweeper, log });
      runner = fleet;
    } else {
      runner = new JobRunner({ config, store, removals, queue, model, drain, log, onItemEnd });
    }
    const webhookRules = webhookAddressRules(config);
    const webhooks = new WebhookSender({
      store,
      secrets: webhookSecrets,
      rules: webhookRules,
      log: app.log.child({ component: 'webhooks' }),
      onOutcome: (outcome) => app.metrics?.countWebhookDelivery(outcome),
    });
    const service = new JobService({ config, store, runner, webhookRules, queue });
    app.decorate('jobs', { runner, sweeper, webhooks, service });
    app.metrics?.readJobItemsQueued(() => runner.queuedItems());
    app.addHook('onReady', async () => {
      await runner.start();
      if (upkeep) await upkeep.start();
      else sweeper.start();
      webhooks.start();
    });
    app.addHook('onClose', async () => {
      await runner.close();
      await upkeep?.close();
      await sweeper.close();
      await webhooks.close();
    });
    await app.register(jobRoutes, { service });
  },
  { name: 'cutout-jobs', dependencies: ['cutout-services', 'cutout-auth', 'cutout-metrics', 'cutout-redis'] },
);
