import fp from 'fastify-plugin';
import { JobRunner } from './job-runner.js';
import { jobRoutes } from './job-routes.js';
import { JobSweeper } from './job-sweeper.js';
import { webhookAddressRules } from './webhook-address.js';
import { WebhookSender } from './webhook-sender.js';

/** The jobs' long-lived parts, for the routes and for tests. */
export interface Jobs {
  runner: JobRunner;
  sweeper: JobSweeper;
  webhooks: WebhookSender;
}

declare module 'fastify' {
  interface FastifyInstance {
    jobs: Jobs;
  }
}

/**
 * Jobs, on one node: the routes, the runner that works through the items with the capacity
 * the removal endpoints leave idle, the sweeper that deletes expired jobs, and the sender of
 * ended jobs' webhooks. They start once the app is ready and stop when it closes, before the store.
 *
 * @example await app.register(jobsPlugin)
 */
export const jobsPlugin = fp(
  async (app) => {
    const { config, store, removals, queue, model, drain, webhookSecrets } = app;
    const log = app.log.child({ component: 'jobs' });
    const runner = new JobRunner({ config, store, removals, queue, model, drain, log, onItemEnd: (state) => app.metrics?.countJobItem(state) });
    const sweeper = new JobSweeper({ store, dataDir: config.dataDir, retentionSeconds: config.jobRetention, log });
    const webhooks = new WebhookSender({
      store,
      secrets: webhookSecrets,
      rules: webhookAddressRules(config),
      log: app.log.child({ component: 'webhooks' }),
      onOutcome: (outcome) => app.metrics?.countWebhookDelivery(outcome),
    });
    app.decorate('jobs', { runner, sweeper, webhooks });
    app.addHook('onReady', async () => {
      await runner.start();
      sweeper.start();
      webhooks.start();
    });
    app.addHook('onClose', async () => {
      await runner.close();
      await sweeper.close();
      await webhooks.close();
    });
    await app.register(jobRoutes, { runner, webhookRules: webhookAddressRules(config) });
  },
  { name: 'cutout-jobs', dependencies: ['cutout-services', 'cutout-auth', 'cutout-metrics'] },
);
