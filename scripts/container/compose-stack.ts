/**
 * The compose half of the container test (scripts/container/test-container.ts): brings up
 * deploy/compose.yaml with podman-compose under a project name of its own, two Cutout replicas
 * behind HAProxy with PostgreSQL and Redis, and removes backgrounds through HAProxy until
 * both replicas have answered one; then takes it all down, volumes included.
 *
 * No container registry is in reach here, so PostgreSQL, Redis and HAProxy run from stand-ins
 * built from Debian's packages (scripts/container/stand-ins/), given to compose.yaml through
 * its POSTGRES_IMAGE, REDIS_IMAGE and HAPROXY_IMAGE variables; Cutout runs from the image the
 * test built.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { check, createToken, freePort, removeThrough, run, waitReady } from './container-checks.js';

interface ComposeTest {
  root: string;
  /** The Cutout image to run. */
  image: string;
  /** Runs a named, timed step (test-container.ts). */
  step: <T>(name: string, fn: () => Promise<T> | T) => Promise<T>;
  photo: Buffer;
}

const PROJECT = 'cutout-compose-test';
const STAND_INS = ['postgres', 'redis', 'haproxy'] as const;

/** Replica containers of the project, by podman-compose's names (<project>_cutout_<n>). */
function replicas(): string[] {
  const out = run('podman', ['ps', '--all', '--format', '{{.Names}}', '--filter', `label=io.podman.compose.project=${PROJECT}`]);
  return out.split('\n').filter((name) => /_cutout_\d+$/.test(name)).sort();
}

/** Waits until the replica answers /readyz 200 inside its container. */
async function waitReplicaReady(container: string, seconds: number): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  const probe = "fetch('http://127.0.0.1:8080/readyz').then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))";
  while (Date.now() < deadline) {
    if (spawnSync('podman', ['exec', container, 'node', '-e', probe], { stdio: 'ignore' }).status === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  const logs = spawnSync('podman', ['logs', '--tail', '40', container], { encoding: 'utf8' });
  throw new Error(`${container} was not ready after ${seconds} s; its log's end:\n${logs.stdout}${logs.stderr}`);
}

/** Brings deploy/compose.yaml up, removes through HAProxy, takes it down (a failure throws). */
export async function bringUpCompose({ root, image, step, photo }: ComposeTest): Promise<void> {
  const composeFile = join(root, 'deploy/compose.yaml');
  const standIns = join(root, 'scripts/container/stand-ins');
  const port = await freePort();
  const images: Record<string, string> = Object.fromEntries(STAND_INS.map((name) => [name, `localhost/cutout-stand-in-${name}:test`]));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CUTOUT_IMAGE: image,
    CUTOUT_PORT: String(port),
    POSTGRES_PASSWORD: randomBytes(12).toString('hex'),
    CUTOUT_WEBHOOK_KEY: randomBytes(32).toString('hex'),
    ...Object.fromEntries(STAND_INS.map((name) => [`${name.toUpperCase()}_IMAGE`, images[name]])),
  };
  const compose = (...argv: string[]) => run('podman-compose', ['--project-name', PROJECT, '--file', composeFile, ...argv], { env, cwd: join(root, 'deploy') });
  const down = () => spawnSync('podman-compose', ['--project-name', PROJECT, '--file', composeFile, 'down', '--volumes', '--timeout', '10'], { env, cwd: join(root, 'deploy'), stdio: 'ignore' });

  await step('compose: stand-ins for PostgreSQL, Redis and HAProxy (Debian packages)', () => {
    for (const name of STAND_INS) {
      run('podman', ['build', '--pull=never', '--format', 'docker', '-f', join(standIns, `${name}.Containerfile`), '-t', images[name], standIns], { stdio: ['ignore', 'ignore', 'inherit'] });
    }
  });

  down();
  try {
    await step('compose: up, until both replicas and HAProxy are ready', async () => {
      compose('up', '--detach', '--no-build');
      const names = replicas();
      check(names.length === 2, `compose runs two Cutout replicas (${names.join(', ')})`);
      for (const name of names) await waitReplicaReady(name, 240);
      await waitReady(`http://127.0.0.1:${port}/readyz`, 60);
      check(true, `HAProxy answers /readyz 200 on 127.0.0.1:${port}`);
    });

    const tokenId = await step('compose: a token from the CLI in one replica', () => createToken(replicas()[0], 'compose-test'));

    await step('compose: removals through HAProxy, answered by both replicas', async () => {
      const base = `http://127.0.0.1:${port}`;
      const answered = (name: string) => {
        const logs = spawnSync('podman', ['logs', name], { encoding: 'utf8' });
        return (logs.stdout + logs.stderr).includes('/api/v1/background/remove/base64');
      };
      // Two at a time: leastconn gives the second to the replica without one. A few rounds, as
      // a replica that is still settling may miss one.
      for (let round = 1; round <= 5; round++) {
        await Promise.all([removeThrough(base, tokenId, photo, `HAProxy (round ${round}, 1)`), removeThrough(base, tokenId, photo, `HAProxy (round ${round}, 2)`)]);
        if (replicas().every(answered)) break;
      }
      for (const name of replicas()) check(answered(name), `${name} answered a removal`);
    });
  } catch (error) {
    for (const name of [...replicas(), `${PROJECT}_haproxy_1`, `${PROJECT}_postgres_1`, `${PROJECT}_redis_1`]) {
      const logs = spawnSync('podman', ['logs', '--timestamps', '--tail', '30', name], { encoding: 'utf8' });
      console.error(`--- ${name}:\n${logs.stdout}${logs.stderr}`);
    }
    throw error;
  } finally {
    await step('compose: down, volumes removed', () => void down());
  }
}
