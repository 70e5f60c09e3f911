import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createServices } from './create-services.js';
import { openStore } from './store/open-store.js';

/** Starts Cutout: config, store, app, listen; then loads the model; stops cleanly on signals. */
async function main(config: Config): Promise<void> {
  const store = await openStore(config);
  const { services, close: closeServices } = createServices(config, store);
  const app = await buildApp(services, { level: config.logLevel });
  await app.listen({ port: config.port, host: config.host });

  const started = performance.now();
  services.model.load().then(
    () => {
      const choice = services.model.precision;
      app.log.info({ ms: Math.round(performance.now() - started), precision: choice?.precision, reason: choice?.reason }, `${choice?.precision ?? 'the'} model loaded and warmed up; ready`);
    },
    (error: unknown) => {
      app.log.fatal({ err: error }, 'the model could not be loaded');
      process.exit(1);
    },
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal, graceMs: config.shutdownGraceMs }, 'stopping: no new connections; finishing requests in flight');
    const overdue = setTimeout(() => {
      app.log.error('requests still in flight after the grace period; exiting anyway');
      // Let a model run in progress end first: killing its thread mid-run aborts the process.
      void services.model.close().finally(() => process.exit(1));
    }, config.shutdownGraceMs);
    overdue.unref();
    // Fastify stops accepting, answers new requests on kept-alive connections with 503,
    // and resolves once every request in flight has been answered.
    await app.close();
    await store.close();
    await closeServices();
    app.log.info('stopped cleanly');
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

try {
  await main(loadConfig(process.env));
} catch (error) {
  console.error(error instanceof ConfigError ? `cutout: ${error.message}` : error);
  process.exit(1);
}
