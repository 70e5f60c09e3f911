import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createServices } from './create-services.js';
import { stopGracefully } from './lifecycle/graceful-stop.js';
import { openStore } from './store/open-store.js';
import type { NewerSchema } from './store/schema-compatibility.js';
import { putEventLoopFirst, threadsStarted } from './threads/thread-priority.js';

/** Starts Cutout: config, store, app, listen; then loads the model; drains and stops cleanly on signals. */
async function main(config: Config): Promise<void> {
  putEventLoopFirst();
  let newerSchema: NewerSchema | undefined;
  const store = await openStore(config, { onNewerSchema: (newer) => (newerSchema = newer) });
  const { services, close: closeServices } = createServices(config, store);
  const app = await buildApp(services, { level: config.logLevel });
  if (newerSchema) {
    app.log.warn(
      { newerMigrations: newerSchema.migrations, servesFrom: newerSchema.servesFrom },
      `the database was migrated by a newer Cutout (${newerSchema.migrations.join(', ')}); this one serves on it without migrating, as during a rolling upgrade: finish the upgrade`,
    );
  }
  await app.listen({ port: config.port, host: config.host });

  const started = performance.now();
  services.model.load().then(
    () => {
      threadsStarted(); // the model's warm-up may have started libvips' threads from this one
      const choice = services.model.precision;
      const models = services.model.loaded.map((model) => ({
        name: model.name,
        precision: model.choice?.precision,
        reason: model.choice?.reason,
        provider: model.provider,
        providerReason: model.providerReason,
        passMs: model.passMs === undefined ? undefined : Math.round(model.passMs),
      }));
      app.log.info(
        {
          ms: Math.round(performance.now() - started),
          precision: choice?.precision,
          reason: choice?.reason,
          models,
          threads: { sessions: config.inferenceConcurrency, perSession: config.inferenceThreads, finish: config.finishThreads, libuv: Number(process.env.UV_THREADPOOL_SIZE) || 4 },
        },
        `${models.map((model) => `${model.name} (${model.precision ?? '?'} on ${model.provider ?? '?'}, ${model.passMs ?? '?'} ms a pass)`).join(', ')} loaded and warmed up; ready`,
      );
    },
    (error: unknown) => {
      app.log.fatal({ err: error }, `the model could not be loaded: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );

  let stopping: Promise<void> | undefined;
  const stop = (signal: string) => {
    stopping ??= stopGracefully(
      {
        app,
        config,
        drain: services.drain,
        closeServices: async () => {
          await store.close();
          await closeServices();
        },
        closeModel: () => services.model.close(),
        exit: (code) => process.exit(code),
      },
      signal,
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

try {
  await main(loadConfig(process.env));
} catch (error) {
  console.error(error instanceof ConfigError ? `cutout: ${error.message}` : error);
  process.exit(1);
}
