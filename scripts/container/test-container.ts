/**
 * The container test (`npm run test:container`, as root, with podman): builds deploy/Dockerfile
 * from the committed tree, runs the image with a volume, makes a token with the CLI inside the
 * container, removes a background through the published port, stops the container with
 * SIGTERM while a removal is in flight and checks the drain (readiness 503, the removal
 * answered, "stopped cleanly", exit code 0), checks the image's size, then brings up
 * deploy/compose.yaml (two replicas behind HAProxy, PostgreSQL, Redis) and removes a background
 * through HAProxy. Prints what each step took.
 *
 *   npm run test:container                     the committed tree (HEAD)
 *   npm run test:container -- --worktree       the working tree, uncommitted changes included
 *   npm run test:container -- --no-compose     the image alone
 *   npm run test:container -- --cold           from empty podman storage (podman system reset):
 *                                              base images, layers and stand-ins made again
 *   npm run test:container -- --out bench/results/container-warm.json   keeps the run's record
 *   CUTOUT_CONTAINER_REF=v0.1.0 npm run test:container
 *
 * scripts/container/setup-podman.sh makes the machine ready first (Debian's podman, runc, a
 * stand-in for the base image); docs/operations.md says what it does and why.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { bringUpCompose } from './compose-stack.js';
import { check, createToken, extraCaFile, freePort, passed, removeThrough, run, runLogged, testPhoto, waitReady } from './container-checks.js';

const root = new URL('../..', import.meta.url).pathname;
const argv = process.argv.slice(2);
const args = new Set(argv);
/** Where to write the run's record (--out FILE), relative to the repository. */
const outFile = argv.includes('--out') ? argv[argv.indexOf('--out') + 1] : undefined;
const loadBefore = loadavg();
let imageBytes = 0;
/** The commit built (HEAD may move while the test runs). */
let builtCommit = '';
const IMAGE = 'localhost/cutout:test';
const NAME = 'cutout-container-test';
const VOLUME = 'cutout-container-test-data';
/** 600 MB: the image holds only what runs on its platform. */
const MAX_IMAGE_BYTES = 600e6;
/** What the Dockerfile copies; the build context holds nothing else. */
const CONTEXT_PATHS = ['package.json', 'package-lock.json', 'tsconfig.json', 'bin', 'src', 'clients/typescript', 'deploy'];

const timings: { step: string; seconds: number }[] = [];
const startedAt = performance.now();

/** Runs `fn` as a named step and keeps how long it took. */
async function step<T>(name: string, fn: () => Promise<T> | T): Promise<T> {
  const began = performance.now();
  console.log(`\n== ${name}`);
  try {
    return await fn();
  } finally {
    const seconds = (performance.now() - began) / 1000;
    timings.push({ step: name, seconds });
    console.log(`   (${seconds.toFixed(1)} s)`);
  }
}

function removeLeftovers(): void {
  spawnSync('podman', ['rm', '--force', '--time', '0', NAME], { stdio: 'ignore' });
  spawnSync('podman', ['volume', 'rm', '--force', VOLUME], { stdio: 'ignore' });
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('run as root: podman here is rootful (scripts/container/setup-podman.sh)');
  const work = mkdtempSync(join(tmpdir(), 'cutout-container-'));
  const context = join(work, 'context');

  if (args.has('--cold')) {
    await step('cold: podman system reset (every image, layer, container and volume removed)', () => {
      run('podman', ['system', 'reset', '--force'], { stdio: 'inherit' });
    });
  }

  await step('set up podman (scripts/container/setup-podman.sh)', () => {
    run(join(root, 'scripts/container/setup-podman.sh'), [], { stdio: 'inherit' });
  });

  await step('build context', () => {
    run('mkdir', ['-p', context]);
    if (args.has('--worktree')) {
      run('bash', ['-c', `tar -C "$1" -c --exclude=node_modules --exclude=dist ${CONTEXT_PATHS.join(' ')} | tar -C "$2" -x`, 'tar', root, context]);
      console.log('   the working tree');
    } else {
      const ref = process.env.CUTOUT_CONTAINER_REF ?? 'HEAD';
      run('bash', ['-c', `git -C "$1" archive --format=tar "$3" -- ${CONTEXT_PATHS.join(' ')} | tar -C "$2" -x`, 'git', root, context, ref]);
      builtCommit = run('git', ['-C', root, 'rev-parse', '--short', ref]).trim();
      console.log(`   ${ref}: ${run('git', ['-C', root, 'log', '-1', '--format=%h %s', ref]).slice(0, 100).trim()}`);
    }
  });

  await step('podman build deploy/Dockerfile', async () => {
    const ca = extraCaFile();
    const secret = ca ? ['--secret', `id=extra_ca,src=${ca}`] : [];
    const log = join(work, 'build.log');
    console.log(`   log: ${log}${ca ? `; npm's extra CA: ${ca}` : ''}`);
    // --format docker keeps the HEALTHCHECK (OCI images have none); --pull=never: the base
    // image is the one setup-podman.sh made.
    await runLogged('podman', ['build', '--pull=never', '--format', 'docker', '--ignorefile', join(context, 'deploy/Dockerfile.dockerignore'), ...secret, '-f', join(context, 'deploy/Dockerfile'), '-t', IMAGE, context], log);
    for (const line of readFileSync(log, 'utf8').split('\n').filter((l) => l.startsWith('trim-node-modules:'))) console.log(`   ${line}`);
  });

  await step('image size', () => {
    imageBytes = Number(run('podman', ['image', 'inspect', '--format', '{{.Size}}', IMAGE]).trim());
    check(imageBytes < MAX_IMAGE_BYTES, `the image is ${(imageBytes / 1e6).toFixed(0)} MB, under ${MAX_IMAGE_BYTES / 1e6} MB`);
  });

  removeLeftovers();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  try {
    await step('podman run, until /readyz answers 200', async () => {
      run('podman', ['volume', 'create', VOLUME]);
      run('podman', ['run', '--detach', '--name', NAME, '--publish', `127.0.0.1:${port}:8080`, '--volume', `${VOLUME}:/var/lib/cutout`, '--env', 'CUTOUT_DRAIN_DELAY_MS=3000', IMAGE]);
      await waitReady(`${base}/readyz`, 180);
      check(true, `the container answers /readyz 200 on ${base}`);
    });

    const tokenId = await step('a token from the CLI inside the container', () => createToken(NAME, 'container-test'));
    const photo = testPhoto();
    await step('a removal through the published port', () => removeThrough(base, tokenId, photo, 'the container'));

    await step('SIGTERM with a removal in flight: the drain', async () => {
      const managed = ((await (await fetch(`${base}/api/v1/auth/token`, { method: 'POST', headers: { token: tokenId } })).json()) as { managed_token: string }).managed_token;
      const inFlight = fetch(`${base}/api/v1/background/remove/base64`, {
        method: 'POST',
        headers: { authorization: managed, 'content-type': 'application/json' },
        body: JSON.stringify({ image_base64: photo.toString('base64') }),
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      run('podman', ['kill', '--signal', 'TERM', NAME]);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const ready = await fetch(`${base}/readyz`).then((r) => r.status, (error: unknown) => String(error));
      check(ready === 503, `during the drain delay /readyz answers 503 (got ${ready})`);
      const answer = await inFlight;
      check(answer.status === 200, `the removal in flight at SIGTERM is answered 200 (got ${answer.status})`);
      const exitCode = run('podman', ['wait', NAME]).trim();
      check(exitCode === '0', `the container exits with 0 (got ${exitCode})`);
      const logs = spawnSync('podman', ['logs', NAME], { encoding: 'utf8' });
      const text = logs.stdout + logs.stderr;
      check(text.includes('drain delay over') && text.includes('stopped cleanly'), 'its log says the drain delay ended and it stopped cleanly');
    });

    await step('the volume keeps the data: a restart knows the token', async () => {
      run('podman', ['start', NAME]);
      await waitReady(`${base}/readyz`, 120);
      const exchange = await fetch(`${base}/api/v1/auth/token`, { method: 'POST', headers: { token: tokenId } });
      check(exchange.status === 200, `after a restart the Token ID is still exchanged (got ${exchange.status})`);
      run('podman', ['stop', '--time', '90', NAME]);
    });
  } catch (error) {
    const logs = spawnSync('podman', ['logs', '--tail', '60', NAME], { encoding: 'utf8' });
    console.error(`--- the container's log, its end:\n${logs.stdout}${logs.stderr}`);
    throw error;
  } finally {
    if (!args.has('--keep')) removeLeftovers();
  }

  if (!args.has('--no-compose')) {
    await bringUpCompose({ root, image: IMAGE, step, photo: testPhoto() });
  }
  rmSync(work, { recursive: true, force: true });
}

/** The run's record, for bench/results/: what ran, on what, how long each step took. */
function writeRecord(file: string, failure: string | undefined): void {
  const record = {
    command: `npm run test:container -- ${argv.join(' ')}`.trim(),
    finishedAt: new Date().toISOString(),
    machine: { cpu: cpus()[0]?.model, cores: cpus().length, loadAverageBefore: loadBefore, loadAverageAfter: loadavg() },
    podman: run('podman', ['--version']).trim(),
    commit: builtCommit || undefined,
    worktree: args.has('--worktree'),
    cold: args.has('--cold'),
    imageBytes,
    checksPassed: passed.count,
    failure,
    totalSeconds: Number(((performance.now() - startedAt) / 1000).toFixed(1)),
    steps: timings.map(({ step: name, seconds }) => ({ step: name, seconds: Number(seconds.toFixed(1)) })),
  };
  writeFileSync(resolvePath(root, file), `${JSON.stringify(record, null, 2)}\n`);
}

main().then(
  () => {
    if (outFile) writeRecord(outFile, undefined);
    const total = (performance.now() - startedAt) / 1000;
    console.log('\nTimings:');
    for (const { step: name, seconds } of timings) console.log(`  ${seconds.toFixed(1).padStart(7)} s  ${name}`);
    console.log(`  ${total.toFixed(1).padStart(7)} s  in all`);
    console.log(`container: ${passed.count} passed, 0 failed`);
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    if (outFile) writeRecord(outFile, error instanceof Error ? error.message.slice(0, 500) : String(error));
    console.log(`container: ${passed.count} passed, 1 failed`);
    process.exitCode = 1;
  },
);
