import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { DrainState } from './drain-state.js';

export interface GracefulStopParts {
  app: FastifyInstance;
  config: Pick<Config, 'drainDelayMs' | 'shutdownGraceMs'>;
  drain: DrainState;
  /** Closes what the app does not: the store, the model's and the finish thread's workers. */
  closeServices(): Promise<void>;
  /** Lets a model run in progress end before an overdue exit (killing its thread mid-run aborts the process). */
  closeModel(): Promise<void>;
  exit(code: number): void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * What a Cutout process does on SIGTERM or SIGINT:
 *
 * 1. `/readyz` answers 503 at once (the drain), and everything else is served as before for
 *    CUTOUT_DRAIN_DELAY_MS, long enough for a load balancer's health checks to take the
 *    replica out of rotation before its listener closes (0 by default: a lone server has
 *    no balancer to wait for);
 * 2. the listener closes, requests on kept-alive connections are answered 503, and the
 *    requests in flight and queued for the model are finished, for at most
 *    CUTOUT_SHUTDOWN_GRACE_MS, after which the process exits with 1 anyway;
 * 3. the services close and the process exits with 0.
 *
 * @example process.once('SIGTERM', () => void stopGracefully(parts, 'SIGTERM'))
 */
export async function stopGracefully(parts: GracefulStopParts, signal: string): Promise<void> {
  const { app, config, drain } = parts;
  drain.begin();
  app.log.info(
    { signal, drainMs: config.drainDelayMs, graceMs: config.shutdownGraceMs },
    config.drainDelayMs > 0
      ? 'stopping: /readyz answers 503; still serving during the drain delay, then no new connections; finishing requests in flight'
      : 'stopping: no new connections; finishing requests in flight',
  );
  if (config.drainDelayMs > 0) {
    await sleep(config.drainDelayMs);
    app.log.info('drain delay over: closing the listener; finishing requests in flight');
  }
  const overdue = setTimeout(() => {
    app.log.error('requests still in flight after the grace period; exiting anyway');
    void parts.closeModel().finally(() => parts.exit(1));
  }, config.shutdownGraceMs);
  overdue.unref();
  // Fastify stops accepting, answers new requests on kept-alive connections with 503,
  // and resolves once every request in flight has been answered.
  await app.close();
  await parts.closeServices();
  app.log.info('stopped cleanly');
  parts.exit(0);
}
