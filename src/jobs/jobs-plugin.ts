import fp from 'fastify-plugin';
import { JobRunner } from './job-runner.js';
import { jobRoutes } from './job-routes.js';
import { JobService } from './job-service.js';
import { JobSweeper } from './job-sweeper.js';
import { webhookAddressRules } from './webhook-address.js';
import { WebhookSender } from './webhook-sender.js';

/** The jobs' long-lived parts, for the routes (the API's and the dashboard's) and for tests. */
export interface Jobs {
  runner: JobRunner;
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
 * Jobs, on one node: the routes, the runner that works through the items with the capacity
 * the removal endpoints leave idle, and the sweeper that deletes expired jobs. The runner
 * and the sweeper start once the app is ready and stop when it closes, before the store.
 *
 * @example await app.register(jobsPlugin)
 */
export const jobsPlugin = fp(
  async (app) => {
    const { config, store, removals, queue, model, drain, webhookSecrets } = app;
    const log = app.log.child({ component: 'jobs' });
    const runner = new JobRunner({ config, store, removals, queue, model, drain, log, onItemEnd: (state) => app.metrics?.countJobItem(state) });
    const sweeper = new JobSweeper({ store, dataDir: config.dataDir, retentionSeconds: config.jobRetention, log });
    const webhookRules = webhookAddressRules(config);
    const webhooks = new WebhookSender({
      store,
      secrets: webhookSecrets,
      rules: webhookRules,
      log: app.log.child({ component: 'webhooks' }),
      onOutcome: (outcome) => app.metrics?.countWebhookDelivery(outcome),
    });
    const service = new JobService({ config, store, runner, webhookRules });
    app.decorate('jobs', { runner, sweeper, webhooks, service });
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
    await app.register(jobRoutes, { service });
  },
  { name: 'cutout-jobs', dependencies: ['cutout-services', 'cutout-auth', 'cutout-metrics'] },
);
