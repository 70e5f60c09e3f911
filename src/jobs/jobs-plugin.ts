import fp from 'fastify-plugin';
import { JobRunner } from './job-runner.js';
import { jobRoutes } from './job-routes.js';
import { JobService } from './job-service.js';
import { JobSweeper } from './job-sweeper.js';

/** The jobs' long-lived parts, for the routes (the API's and the dashboard's) and for tests. */
export interface Jobs {
  runner: JobRunner;
  sweeper: JobSweeper;
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
    const { config, store, removals, queue, model, drain } = app;
    const log = app.log.child({ component: 'jobs' });
    const runner = new JobRunner({ config, store, removals, queue, model, drain, log, onItemEnd: (state) => app.metrics?.countJobItem(state) });
    const sweeper = new JobSweeper({ store, dataDir: config.dataDir, retentionSeconds: config.jobRetention, log });
    const service = new JobService({ config, store, runner });
    app.decorate('jobs', { runner, sweeper, service });
    app.addHook('onReady', async () => {
      await runner.start();
      sweeper.start();
    });
    app.addHook('onClose', async () => {
      await runner.close();
      await sweeper.close();
    });
    await app.register(jobRoutes, { service });
  },
  { name: 'cutout-jobs', dependencies: ['cutout-services', 'cutout-auth', 'cutout-metrics'] },
);
