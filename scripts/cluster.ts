/**
 * `npm run cluster`: three Cutout replicas behind HAProxy, with a PostgreSQL and a Redis of
 * their own, under a steady closed-loop load, through four faults:
 *
 *   1. kill -9 one replica: only the requests in flight on it may fail;
 *   2. a rolling restart of all three with SIGTERM: no request fails;
 *   3. PostgreSQL stopped for a few seconds: 503 store_unavailable while it is away, none
 *      after, no replica restarted;
 *   4. a token revoked at one replica is refused at every one at once; the rate limit and
 *      the sign-in throttle hold across replicas;
 *   5. jobs across replicas: a job of 500 images (from a local HTTP server) on two replicas,
 *      one killed with SIGKILL part-way: every image done once and counted once;
 *   6. a Redis that forgets: a job of 100 images on two replicas, FLUSHDB once a fifth is
 *      done: every image once and counted once, no replica restarted, within 2 minutes of
 *      the flush plus the work left (reconciliation from the database).
 *
 * It prints a table of requests by outcome per phase and what HAProxy adds to a request's
 * latency, and exits non-zero if any check failed. Everything it starts lives in a
 * temporary directory, on ports and in network namespaces of its own, and is stopped at the
 * end (or after RUN_LIMIT_MS whatever happens). bench/results/history-cluster.md records its runs.
 *
 *   npm run cluster                      # builds src/ into .cluster-build/, then runs
 *   npm run cluster -- --keep            # keeps the temporary directory (logs) afterwards
 *   npm run cluster -- --loopback        # replicas on loopback ports even where namespaces can be made
 *   npm run cluster -- --job-items 50    # phase 5's job of 50 images instead of 500
 *   npm run cluster -- --flush-items 40  # phase 6's job of 40 images instead of 100
 *   npm run cluster -- --jobs-only       # two replicas and phases 5 and 6 alone
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { TokenService } from '../src/auth/token-service.js';
import { openPostgresStore } from '../src/store/postgres-store.js';
import { describeMachine } from './bench/machine.js';
import { compileServer, serverEntry, startScriptEnvironment } from './lib/server-process.js';
import { processMemory, readBackendCounters } from './cluster/backend-counters.js';
import { DashboardClient } from './cluster/dashboard-client.js';
import { askSocket, startHaproxy, type ClusterHaproxy } from './cluster/haproxy.js';
import { json, problemCode, request, type Answer } from './cluster/http.js';
import { runFlushPhase } from './cluster/flush-phase.js';
import { runJobsPhase } from './cluster/jobs-phase.js';
import { ClosedLoopLoad, type LoadClient, type Outcome } from './cluster/load.js';
import { createNetwork, type ClusterNetwork } from './cluster/network.js';
import { startPostgres, type ClusterPostgres } from './cluster/postgres.js';
import { startRedis, type ClusterRedis } from './cluster/redis.js';
import { Replica } from './cluster/replica.js';
import { countProbeLogLines, measureAddedLatency, receivedRequests, unfinishedRequests } from './cluster/observations.js';
import { outcomeLabel, phaseTable, type Phase } from './cluster/report.js';
import { available, freePort, sleep, waitFor } from './cluster/shell.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const argument = (name: string) => {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
};
/** Phase 5's job: its number of images, and whether the run is that phase alone. */
const JOB_ITEMS = Number(argument('--job-items') ?? 500);
const JOBS_ONLY = process.argv.includes('--jobs-only');
if (!Number.isInteger(JOB_ITEMS) || JOB_ITEMS < 10 || JOB_ITEMS > 10_000) throw new Error('--job-items takes a whole number from 10 to 10000');
/** Phase 6's job: its number of images. */
const FLUSH_ITEMS = Number(argument('--flush-items') ?? 100);
if (!Number.isInteger(FLUSH_ITEMS) || FLUSH_ITEMS < 10 || FLUSH_ITEMS > 10_000) throw new Error('--flush-items takes a whole number from 10 to 10000');
/** The replicas' CUTOUT_JOB_RECONCILE_MS. */
const RECONCILE_MS = 30_000;
/** The whole run, set-up included, is stopped past this: the phases, and the job at a few seconds an image. */
const RUN_LIMIT_MS = 18 * 60_000 + (JOB_ITEMS + FLUSH_ITEMS) * 4000;
/** The photos of phase 5's job, when the shared fixtures are there. */
const SHARED_PHOTOS = fileURLToPath(new URL('../../shared/fixtures/photos', import.meta.url));
const REMOVAL_CLIENTS = 5;
const PASSWORD = 'cluster run password';
const OWNER = 'owner@cluster.invalid';
/** As deploy/cutout.service: longer than HAProxy's inter × fall (2 s). */
const DRAIN_DELAY_MS = 5000;
const RATE_LIMIT = 60;

const t0 = performance.now();
const clock = () => performance.now() - t0;
const say = (line: string) => process.stdout.write(`[${(clock() / 1000).toFixed(1).padStart(6)} s] ${line}\n`);

/** What was checked, and whether it held. */
const checks: { phase: string; what: string; ok: boolean }[] = [];
function check(phase: string, what: string, ok: boolean): void {
  checks.push({ phase, what, ok });
  say(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
}

const failed = (o: Outcome) => o.error !== undefined || o.status !== 200;

interface Cluster {
  dir: string;
  network: ClusterNetwork;
  postgres: ClusterPostgres;
  redis: ClusterRedis;
  replicas: Replica[];
  haproxy: ClusterHaproxy;
}

const stoppers: (() => Promise<unknown>)[] = [];

async function main(): Promise<number> {
  const keep = process.argv.includes('--keep');
  for (const command of ['haproxy', 'redis-server']) if (!available(command)) throw new Error(`${command} is missing (apt-get install ${command === 'haproxy' ? 'haproxy' : 'redis-server'})`);
  const machine = describeMachine();
  say(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, load ${machine.loadAverage.join(' ')}, Node ${machine.node}`);

  const dir = await mkdtemp(join(tmpdir(), 'cutout-cluster-'));
  stoppers.push(() => (keep ? Promise.resolve(say(`kept ${dir}`)) : rm(dir, { recursive: true, force: true })));
  say(`working directory ${dir}`);

  const buildDir = join(ROOT, '.cluster-build');
  const { warning } = await compileServer(ROOT, buildDir);
  if (warning) say(warning);

  const network = await createNetwork(3, say, { loopback: process.argv.includes('--loopback') });
  stoppers.push(() => network.teardown());
  say(`network: ${network.mode === 'netns' ? `a namespace per replica (${network.replicas.map((r) => r.host).join(', ')})` : 'loopback ports'}`);

  const postgres = await startPostgres(join(dir, 'postgres'), await freePort(), network.servicesListen, network.clientNetworks);
  stoppers.push(() => postgres.destroy());
  const redis = await startRedis(dir, await freePort(), network.servicesListen);
  stoppers.push(() => redis.destroy());
  say(`PostgreSQL on port ${postgres.port}, Redis on port ${redis.port}: fresh, the cluster's own`);

  // One fresh data directory shared by all three: they race to assemble the model into it.
  const common = {
    ...(await startScriptEnvironment(ROOT)),
    CUTOUT_DATA_DIR: join(dir, 'data'),
    CUTOUT_INFERENCE_THREADS: '1',
    CUTOUT_JOB_RECONCILE_MS: String(RECONCILE_MS),
    CUTOUT_DRAIN_DELAY_MS: String(DRAIN_DELAY_MS),
    CUTOUT_SHUTDOWN_GRACE_MS: '60000',
    CUTOUT_TRUST_PROXY: 'true',
    CUTOUT_RATE_LIMIT: String(RATE_LIMIT),
    // Phase 5's photos come from a server of this script, on the host's private addresses.
    CUTOUT_URL_ALLOW_PRIVATE: 'true',
    // A killed replica's image of a job is taken over within about twice this.
    CUTOUT_JOB_STALLED_MS: '5000',
    LOG_LEVEL: 'info',
  };
  const replicas = network.replicas.map(
    (address) =>
      new Replica(address, {
        dir,
        main: serverEntry(buildDir),
        env: { ...common, DATABASE_URL: postgres.urlFrom(address.servicesHost), REDIS_URL: redis.urlFrom(address.servicesHost) },
      }),
  );
  stoppers.push(() => Promise.all(replicas.map((replica) => replica.destroy())));

  const startedAt = clock();
  // Phase 5 alone needs two.
  const started = JOBS_ONLY ? replicas.slice(0, 2) : replicas;
  for (const replica of started) replica.spawn();
  await Promise.all(started.map((replica) => replica.ready()));
  say(`${started.length} replicas started at once on the fresh database and data directory: all ready after ${((clock() - startedAt) / 1000).toFixed(1)} s`);
  const setupCodes = await Promise.all(started.map(async (replica) => /setup code ([A-Z0-9-]{14})/.exec(await readFile(replica.logPath, 'utf8'))?.[1]));
  check('start', `every replica printed the same setup code (${setupCodes.join(', ')})`, setupCodes[0] !== undefined && setupCodes.every((code) => code === setupCodes[0]));

  const haproxy = await startHaproxy(ROOT, dir, { port: await freePort(), statsPort: await freePort(), servers: replicas.map((r) => ({ name: r.name, address: `${r.address.host}:${r.address.port}` })) });
  stoppers.push(() => haproxy.destroy());
  await waitUp(haproxy, started.map((r) => r.name));
  say(`HAProxy at ${haproxy.origin}, ${started.map((r) => r.name).join(', ')} UP`);

  const cluster: Cluster = { dir, network, postgres, redis, replicas, haproxy };
  const code = await runPhases(cluster, setupCodes[0] ?? '');
  await writeFile(join(dir, 'checks.json'), JSON.stringify(checks, null, 2));
  return code;
}

/** Waits until HAProxy sees each of `names` UP. */
function waitUp(haproxy: ClusterHaproxy, names: string[], timeoutMs = 60_000): Promise<void> {
  return waitFor(`HAProxy to see ${names.join(', ')} UP`, async () => {
    const stats = await haproxy.stats();
    return names.every((name) => stats[name]?.status === 'UP');
  }, timeoutMs, 200);
}

async function runPhases(cluster: Cluster, setupCode: string): Promise<number> {
  const { haproxy, replicas, postgres } = cluster;
  const [r1, r2, r3] = replicas;

  // The owner signs up through the balancer, with the code every replica printed.
  const owner = new DashboardClient();
  const setup = await owner.submit(haproxy.origin, '/dashboard/setup', '/dashboard/setup', { setup_code: setupCode, email: OWNER, password: PASSWORD, password_again: PASSWORD });
  check('start', `the first account was created through HAProxy with that code (${setup.status} → ${String(setup.headers.location)})`, setup.status === 303 && setup.headers.location === '/dashboard/tokens');

  // Tokens, made as the CLI would, in the cluster's database.
  const store = await openPostgresStore(postgres.urlFrom('127.0.0.1'));
  const tokens = new TokenService(store, { managedTokenTtl: 3600 });
  const [account] = await store.listAccounts();
  const tokenIds: Record<string, string> = {};
  const userTokenIds: Record<string, string> = {};
  for (const name of [...Array.from({ length: REMOVAL_CLIENTS }, (_, i) => `load-${i + 1}`), 'exchange', 'victim', 'limited', 'jobs', 'flush']) {
    const created = await tokens.createUserToken(name, null, account.id);
    tokenIds[name] = created.tokenId;
    userTokenIds[name] = created.token.id;
  }
  await store.close();
  const exchange = async (origin: string, name: string) => json<{ managed_token: string }>(await request(origin, 'POST', '/api/v1/auth/token', { headers: { token: tokenIds[name] } }))!.managed_token;

  // The jobs' photos: the shared fixtures where they are, else a drawn one (jobs-phase.ts).
  const photoFiles = existsSync(SHARED_PHOTOS) ? readdirSync(SHARED_PHOTOS).filter((file) => file.endsWith('.jpg')).map((file) => join(SHARED_PHOTOS, file)) : [];
  /** What both job phases take of the cluster, for the token named `token`. */
  const phaseParts = async (token: 'jobs' | 'flush') => ({
    managedToken: await exchange(r1.origin, token),
    userTokenId: userTokenIds[token],
    dataDir: join(cluster.dir, 'data'),
    postgresUrl: postgres.urlFrom('127.0.0.1'),
    photoFiles,
  });
  const jobsPhase = async () => {
    say(`— 5. jobs across replicas (${JOB_ITEMS} images, ${r1.name} and ${r2.name}; ${r2.name} killed part-way)`);
    if (r3.running) {
      await r3.stop('SIGTERM');
      say(`${r3.name} stopped with SIGTERM for the phase`);
    }
    return runJobsPhase({
      workers: [r1, r2],
      ...(await phaseParts('jobs')),
      items: JOB_ITEMS,
      say,
      check: (what, ok) => check('5. jobs across replicas', what, ok),
    });
  };
  const flushPhase = async () => {
    say(`— 6. a Redis that forgets (${FLUSH_ITEMS} images, ${r1.name} and ${r2.name}; FLUSHDB part-way)`);
    if (!r2.running) {
      await r2.start();
      say(`${r2.name} started again for the phase`);
    }
    return runFlushPhase({
      workers: [r1, r2],
      ...(await phaseParts('flush')),
      redisUrl: cluster.redis.urlFrom('127.0.0.1'),
      items: FLUSH_ITEMS,
      reconcileMs: RECONCILE_MS,
      say,
      check: (what, ok) => check('6. a Redis that forgets', what, ok),
    });
  };
  if (JOBS_ONLY) {
    const figures = { jobs: await jobsPhase(), flush: await flushPhase() };
    await writeFile(join(cluster.dir, 'jobs.json'), JSON.stringify(figures, null, 2));
    return summarizeChecks();
  }

  const latency = await measureAddedLatency(haproxy.origin, r1.origin);
  say(`GET /healthz, 400 each, one connection kept alive: direct p50 ${latency.direct.p50.toFixed(2)} ms p99 ${latency.direct.p99.toFixed(2)} ms; through HAProxy p50 ${latency.proxied.p50.toFixed(2)} ms p99 ${latency.proxied.p99.toFixed(2)} ms`);

  // The load: removals of a small photo by five clients, token exchanges by a sixth.
  const photo = await sharp({ create: { width: 480, height: 360, channels: 3, background: { r: 230, g: 235, b: 240 } } })
    .composite([{ input: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="480" height="360"><circle cx="240" cy="180" r="110" fill="#e8761a"/></svg>') }])
    .jpeg()
    .toBuffer();
  const body = JSON.stringify({ image_base64: photo.toString('base64') });
  const clients: LoadClient[] = [];
  for (let i = 1; i <= REMOVAL_CLIENTS; i++) {
    const managed = await exchange(haproxy.origin, `load-${i}`);
    clients.push({
      name: `removal-${i}`,
      thinkMs: 0,
      send: (agent, requestId) =>
        request(haproxy.origin, 'POST', '/api/v1/background/remove/base64', { agent, body, headers: { authorization: managed, 'content-type': 'application/json', 'x-request-id': requestId } }),
    });
  }
  clients.push({
    name: 'exchange',
    thinkMs: 100,
    send: (agent, requestId) => request(haproxy.origin, 'POST', '/api/v1/auth/token', { agent, headers: { token: tokenIds.exchange, 'x-request-id': requestId } }),
  });
  const load = new ClosedLoopLoad(clients, clock);
  const phases: Phase[] = [];
  const phase = async (name: string, run: (p: Phase) => Promise<void>) => {
    const current = { name, start: clock(), end: Number.POSITIVE_INFINITY };
    phases.push(current);
    say(`— ${name}`);
    await run(current);
    if (current.end === Number.POSITIVE_INFINITY) current.end = clock();
  };
  // As in the table: by when the answer (or the error) came.
  const outcomesOf = (p: Phase) => load.outcomes.filter((o) => o.end >= p.start && o.end < p.end);

  const countersBefore = await readBackendCounters(cluster.redis.urlFrom('127.0.0.1'), postgres.urlFrom('127.0.0.1'));
  load.start();
  await phase('steady load', async () => {
    await sleep(15_000);
  });

  await phase('1. kill -9 r2', async (p) => {
    await sleep(5000);
    const exit = await r2.stop('SIGKILL');
    const deadAt = clock();
    // What r2 held when it died: the requests its log shows coming in and never completed.
    const held = await unfinishedRequests(r2);
    say(`killed r2 (${JSON.stringify(exit)}) holding ${held.size} requests of the load: ${[...held].join(', ') || 'none'}`);
    await sleep(15_000);
    await r2.start();
    await waitUp(haproxy, ['r2']);
    say('r2 restarted and UP again');
    p.end = clock();
    // A failed request must have been r2's: sent before it died, never received by r1 or r3,
    // and either unfinished in r2's log or sent in its last second (still on its way into r2,
    // in the kernel's buffers or HAProxy's connection, when the process died: not logged yet).
    const elsewhere = new Set([...(await receivedRequests(r1)), ...(await receivedRequests(r3))]);
    const failures = outcomesOf(p).filter(failed);
    const inTransit = failures.filter((o) => !held.has(o.requestId) && deadAt - o.start < 1000);
    check(
      p.name,
      `${failures.length} requests failed, all of them r2's: ${failures.length - inTransit.length} unfinished in its log, ${inTransit.length} sent in its last second; none reached r1 or r3`,
      failures.every((o) => o.start < deadAt && !elsewhere.has(o.requestId) && (held.has(o.requestId) || deadAt - o.start < 1000)),
    );
    const later = load.outcomes.filter((o) => o.start >= deadAt && o.start < p.end);
    check(p.name, `all ${later.length} requests sent after the kill were answered 200 (refused connections retried on r1 and r3)`, later.length > 0 && later.every((o) => !failed(o)));
  });

  await phase('2. rolling restart (SIGTERM)', async (p) => {
    for (const replica of replicas) {
      const before = replica.pid;
      replica.signal('SIGTERM');
      const signalledAt = clock();
      await waitFor(`${replica.name}'s /readyz to answer 503`, async () => (await request(replica.origin, 'GET', '/readyz').catch(() => undefined))?.status === 503, 2000, 10);
      const notReadyAfter = clock() - signalledAt;
      const exit = await replica.exited();
      say(`${replica.name} (pid ${before}): /readyz 503 after ${notReadyAfter.toFixed(0)} ms, exited ${JSON.stringify(exit)} after ${((clock() - signalledAt) / 1000).toFixed(1)} s`);
      check(p.name, `${replica.name} answered /readyz 503 within 500 ms of SIGTERM and exited 0`, notReadyAfter < 500 && exit.code === 0);
      await replica.start();
      await waitUp(haproxy, [replica.name]);
    }
    p.end = clock();
    const failures = outcomesOf(p).filter(failed);
    check(p.name, `no request failed (${outcomesOf(p).length} sent)`, failures.length === 0);
  });

  await phase('3. PostgreSQL stopped 5 s', async (p) => {
    const pids = replicas.map((r) => r.pid);
    let notUp = 0;
    const watching = (async () => {
      while (p.end === Number.POSITIVE_INFINITY) {
        const stats = await haproxy.stats();
        notUp += Object.values(stats).filter((s) => s.status !== 'UP').length;
        await sleep(250);
      }
    })();
    const stoppedAt = clock();
    await postgres.stop();
    say('PostgreSQL stopped (fast: connections terminated)');
    await sleep(5000);
    await postgres.start();
    const backAt = clock();
    say(`PostgreSQL accepting connections again after ${((backAt - stoppedAt) / 1000).toFixed(1)} s`);
    await sleep(15_000);
    p.end = clock();
    await watching;
    const during = load.outcomes.filter((o) => o.start >= stoppedAt && o.start < backAt);
    const after = load.outcomes.filter((o) => o.start >= backAt && o.start < p.end);
    const unavailable = during.filter((o) => o.status === 503 && o.code === 'store_unavailable').length;
    check(p.name, `while it was away: ${unavailable} answers 503 store_unavailable, every other one 200`, unavailable > 0 && during.every((o) => o.status === 200 || (o.status === 503 && o.code === 'store_unavailable')));
    check(p.name, `once it was back: all ${after.length} requests answered 200`, after.length > 0 && after.every((o) => !failed(o)));
    check(p.name, 'no replica restarted, none left HAProxy\'s rotation', replicas.every((r, i) => r.running && r.pid === pids[i]) && notUp === 0);
  });

  await phase('4. shared state', async (p) => {
    // Revocation: a managed token that works at every replica, revoked in r1's dashboard.
    const victim = await exchange(r1.origin, 'victim');
    const probe = (origin: string, managed: string) =>
      request(origin, 'POST', '/api/v1/background/remove/base64', { headers: { authorization: managed, 'content-type': 'application/json' }, body: '{"image_base64":""}' });
    const before = await Promise.all(replicas.map((r) => probe(r.origin, victim)));
    check(p.name, `the victim's managed token passes the token check at every replica (${before.map((a) => a.status).join(', ')}: 400 for the empty image)`, before.every((a) => a.status === 400));
    const id = userTokenIds.victim;
    const revoked = await owner.submit(r1.origin, `/dashboard/tokens/${id}/revoke`, `/dashboard/tokens/${id}/revoke`, {});
    const revokedAt = clock();
    const after = await Promise.all(replicas.map(async (r) => ({ answer: await probe(r.origin, victim), ms: clock() - revokedAt })));
    check(
      p.name,
      `revoked at r1 (${revoked.status}); refused at r1, r2, r3 within ${Math.max(...after.map((a) => a.ms)).toFixed(0)} ms: ${after.map((a) => `${a.answer.status} ${problemCode(a.answer)}`).join(', ')}`,
      revoked.status === 303 && after.every((a) => a.answer.status === 401 && problemCode(a.answer) === 'revoked_token'),
    );

    // The rate limit: RATE_LIMIT requests spread over the three, then one more at each.
    const limited = await exchange(r1.origin, 'limited');
    const spent: Answer[] = [];
    for (let i = 0; i < RATE_LIMIT; i++) spent.push(await probe(replicas[i % 3].origin, limited));
    const over = await Promise.all(replicas.map((r) => probe(r.origin, limited)));
    check(
      p.name,
      `rate limit: ${RATE_LIMIT} requests over three replicas counted once (${spent.filter((a) => a.status === 400).length} let through), then 429 at each: ${over.map((a) => `${a.status} ${problemCode(a)}`).join(', ')}`,
      spent.every((a) => a.status === 400) && over.every((a) => a.status === 429 && problemCode(a) === 'rate_limited'),
    );

    // The sign-in throttle: five wrong passwords spread over the three, then the right one.
    const guesser = new DashboardClient();
    const wrong: number[] = [];
    for (const replica of [r1, r2, r3, r1, r2]) wrong.push((await guesser.submit(replica.origin, '/dashboard/sign-in', '/dashboard/sign-in', { email: OWNER, password: 'not the password' })).status);
    const right = await Promise.all([r3, r1].map((r) => new DashboardClient().submit(r.origin, '/dashboard/sign-in', '/dashboard/sign-in', { email: OWNER, password: PASSWORD })));
    check(
      p.name,
      `sign-in throttle: 5 wrong passwords at r1, r2, r3, r1, r2 (${wrong.join(', ')}), then the right one refused at r3 and r1 (${right.map((a) => a.status).join(', ')})`,
      wrong.every((s) => s === 401) && right.every((a) => a.status === 429),
    );
    p.end = clock();
  });

  await load.stop();


  // HAProxy's own answer when no replica can take a request: every server put in
  // maintenance through the admin socket for one request, then back.
  for (const replica of replicas) await askSocket(haproxy.socketPath, `disable server cutout/${replica.name}`);
  const unavailable = await request(haproxy.origin, 'POST', '/api/v1/auth/token', { headers: { token: tokenIds.exchange } });
  for (const replica of replicas) await askSocket(haproxy.socketPath, `enable server cutout/${replica.name}`);
  const problem = json<{ code?: string; request_id?: string }>(unavailable);
  check(
    'end',
    `with no replica available HAProxy answers ${unavailable.status} ${String(unavailable.headers['content-type'])} code ${problem?.code}, Retry-After ${String(unavailable.headers['retry-after'])}`,
    unavailable.status === 503 && /problem\+json/.test(String(unavailable.headers['content-type'])) && problem?.code === 'queue_full' && Number(unavailable.headers['retry-after']) > 0 && Boolean(problem?.request_id),
  );
  const countersAfter = await readBackendCounters(cluster.redis.urlFrom('127.0.0.1'), postgres.urlFrom('127.0.0.1'));
  const memory = await Promise.all(replicas.map(async (r) => ({ name: r.name, ...(await processMemory(r.pid!)) })));

  const table = phaseTable(load.outcomes, phases);
  const probeLines = await countProbeLogLines(replicas);
  process.stdout.write(`\n${table}\n\n`);
  const added = (ms: number) => `${ms < 0 ? '−' : '+'}${Math.abs(ms).toFixed(2)} ms`;
  process.stdout.write(`HAProxy's added latency (GET /healthz, 400 requests each way, sequential, kept-alive): p50 ${added(latency.proxied.p50 - latency.direct.p50)}, p99 ${added(latency.proxied.p99 - latency.direct.p99)}\n`);
  process.stdout.write(`Health checks logged at info by the replicas: ${probeLines} lines\n`);
  // Per request of the load (phase 4's own requests are direct and few: counted in, said here).
  const removals = load.outcomes.filter((o) => o.client.startsWith('removal')).length;
  const exchanges = load.outcomes.length - removals;
  process.stdout.write(
    `Backends over the load (${removals} removals, ${exchanges} exchanges, plus phase 4's ${RATE_LIMIT + 12} direct requests): ` +
      `Redis ${countersAfter.redisCommands - countersBefore.redisCommands} commands (${Object.entries(countersAfter.redisByCommand)
        .map(([command, calls]) => [command, calls - (countersBefore.redisByCommand[command] ?? 0)] as const)
        .filter(([, calls]) => calls > 0)
        .map(([command, calls]) => `${command} ${calls}`)
        .join(', ')}), PostgreSQL ${countersAfter.postgresTransactions - countersBefore.postgresTransactions} transactions; ` +
      `connections open at the end: ${JSON.stringify(countersAfter.postgresConnections)}\n`,
  );
  process.stdout.write(`Replicas' memory at the end (resident now / peak since their last start): ${memory.map((m) => `${m.name} ${m.rssMiB} / ${m.peakMiB} MiB`).join(', ')}\n`);
  // Last, once the load's figures are taken: the job's own Redis and PostgreSQL work is not the load's.
  const jobs = await jobsPhase();
  process.stdout.write(
    `Jobs across replicas: ${jobs.items} images in ${jobs.seconds.toFixed(1)} s (${jobs.itemsPerSecond.toFixed(2)} images/s on two replicas, one killed after ${jobs.succeededAtKill}), ${jobs.redone} started again\n`,
  );
  const flush = await flushPhase();
  process.stdout.write(
    `A Redis that forgets: ${flush.items} images, FLUSHDB after ${flush.succeededAtFlush}; done ${flush.secondsAfterFlush.toFixed(1)} s after it (the work left: ${flush.remainingWorkSeconds.toFixed(1)} s)\n`,
  );
  const failures = load.outcomes.filter(failed);
  if (failures.length) process.stdout.write(`\nFailed requests:\n${failures.map((o) => `  ${o.requestId} sent at ${(o.start / 1000).toFixed(1)} s: ${outcomeLabel(o)}`).join('\n')}\n`);
  await writeFile(join(cluster.dir, 'outcomes.json'), JSON.stringify({ phases, outcomes: load.outcomes, latency, countersBefore, countersAfter, memory, jobs, flush }, null, 2));
  return summarizeChecks();
}

/** Prints how many checks held; the exit code: 1 when one failed. */
function summarizeChecks(): number {
  const bad = checks.filter((c) => !c.ok);
  process.stdout.write(`\n${checks.length - bad.length} of ${checks.length} checks held${bad.length ? `; FAILED: ${bad.map((c) => c.what).join('; ')}` : ''}\n`);
  return bad.length ? 1 : 0;
}

async function stopEverything(): Promise<void> {
  for (const stop of stoppers.reverse()) await stop().catch((error: unknown) => say(`clean-up: ${(error as Error).message}`));
}

const limit = setTimeout(() => {
  say(`the run took longer than ${RUN_LIMIT_MS / 60_000} minutes; stopping`);
  void stopEverything().finally(() => process.exit(2));
}, RUN_LIMIT_MS);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void stopEverything().finally(() => process.exit(130)));
// Whatever goes wrong, the namespaces, PostgreSQL and the replicas must not outlive the run.
process.once('uncaughtException', (error) => {
  say(`the run failed: ${error.stack ?? String(error)}`);
  void stopEverything().finally(() => process.exit(1));
});

let code = 1;
try {
  code = await main();
} catch (error) {
  say(`the run failed: ${(error as Error).stack ?? String(error)}`);
} finally {
  await stopEverything();
  clearTimeout(limit);
}
process.exit(code);
