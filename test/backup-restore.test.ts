import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { unzipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenService } from '../src/auth/token-service.js';
import { openSqliteStore } from '../src/store/sqlite-store.js';
import { multipartBody } from '../scripts/lib/multipart-body.js';
import { runCli } from './helpers/cli.js';
import { makePhoto } from './helpers/images.js';
import { exchangeOverHttp, freshDataDir, killLeftoverChildren, removeBackgroundOverHttp, send, startServer, type ServerProcess } from './processes/server-process.js';
import { until } from './helpers/until.js';

// `cutout backup` and `cutout restore` on the real thing: `src/main.ts` as a child process on
// SQLite, removals and a job of uploaded images running while the backup is taken, then the
// data directory wiped, the backup restored and the server started again on it.

const TIMEOUT_MS = 240_000;
/** Images of the job that runs while the backup is taken: enough that it is usually still running then. */
const UPLOADS = 4;

let photos: Server;
let photoOrigin: string;
let work: string;

beforeAll(async () => {
  const photo = await makePhoto('jpeg', 320, 240);
  photos = createServer((_request, response) => response.writeHead(200, { 'content-type': 'image/jpeg' }).end(photo));
  await new Promise<void>((resolve) => photos.listen(0, '127.0.0.1', resolve));
  photoOrigin = `http://127.0.0.1:${(photos.address() as AddressInfo).port}`;
  work = await mkdtemp(join(tmpdir(), 'cutout-backup-test-'));
});
afterAll(async () => {
  await killLeftoverChildren();
  await new Promise((resolve) => photos?.close(resolve));
  if (work) await rm(work, { recursive: true, force: true });
});

interface JobAnswer {
  status: string;
  counts: Record<string, number>;
}

async function jobOf(server: ServerProcess, managed: string, id: string): Promise<JobAnswer> {
  const answer = await send(server.origin, 'GET', `/api/v1/jobs/${id}?per_page=1`, { headers: { authorization: managed } });
  expect(answer.status, answer.body.toString()).toBe(200);
  return JSON.parse(answer.body.toString()) as JobAnswer;
}

/** The job's results zip, as file name → bytes. */
async function resultsOf(server: ServerProcess, managed: string, id: string): Promise<Record<string, Uint8Array>> {
  const zip = await send(server.origin, 'GET', `/api/v1/jobs/${id}/results`, { headers: { authorization: managed } });
  expect(zip.status, zip.body.toString()).toBe(200);
  return unzipSync(new Uint8Array(zip.body));
}

/** Reads the data directory's database on a connection of its own, read-only. */
function query<T>(dataDir: string, sql: string): T {
  const database = new SQLite(join(dataDir, 'cutout.sqlite'), { readonly: true });
  try {
    return database.prepare(sql).get() as T;
  } finally {
    database.close();
  }
}

const countedRemovals = (dataDir: string) => query<{ n: number }>(dataDir, 'select coalesce(sum(succeeded + refused + failed), 0) as n from usage_daily').n;

// The two describes run at the same time, and the refusals' tests with each other: each test
// has data directories of its own, and the refusals' CLI runs fit in while the first test
// waits for its servers and jobs.
describe.concurrent('cutout backup under load, then restore into a wiped data directory', () => {
  it('brings back the tokens (revocations too), the usage, the finished jobs with their results, a job still running, and the webhook key', { timeout: TIMEOUT_MS }, async ({ expect }) => {
    const { dataDir, tokenId } = await freshDataDir('cutout-backup-data-', 'kept');
    const backupDir = join(work, 'backup');
    const env = { CUTOUT_DATA_DIR: dataDir, CUTOUT_URL_ALLOW_PRIVATE: 'true', CUTOUT_RATE_LIMIT: '0' };
    let revokedTokenId: string;
    {
      const store = await openSqliteStore(dataDir);
      const tokens = new TokenService(store, { managedTokenTtl: 600 });
      revokedTokenId = (await tokens.createUserToken('revoked')).tokenId;
      await tokens.revokeUserToken('revoked');
      await store.close();
    }
    const secret = await runCli(['webhook-secret', '--token', 'kept'], { env: { CUTOUT_DATA_DIR: dataDir } });
    expect(secret.code, secret.stderr).toBe(0);
    const keyBefore = await readFile(join(dataDir, 'webhook.key'));

    const first = await startServer(env);
    const managed = await exchangeOverHttp(first.origin, tokenId);
    const small = await makePhoto('jpeg', 160, 120);
    for (let i = 0; i < 3; i++) expect((await removeBackgroundOverHttp(first.origin, managed, small)).status).toBe(200);

    // A job that is finished before the backup: its results must come back byte for byte.
    const images = Array.from({ length: 3 }, (_, i) => ({ image_url: `${photoOrigin}/photo-${i}.jpg`, id: `done-${i}` }));
    const created = await send(first.origin, 'POST', '/api/v1/jobs', { headers: { authorization: managed, 'content-type': 'application/json' }, body: JSON.stringify({ images }) });
    expect(created.status, created.body.toString()).toBe(202);
    const finishedId = (JSON.parse(created.body.toString()) as { id: string }).id;
    await until(() => jobOf(first, managed, finishedId), (job) => job.status === 'done', 'the first job is done');
    const finishedResults = await resultsOf(first, managed, finishedId);
    expect(Object.keys(finishedResults).sort()).toEqual(['done-0.png', 'done-1.png', 'done-2.png']);
    // Usage is counted after the answer: wait until the 3 removals and 3 images are in.
    await until(() => countedRemovals(dataDir), (n) => n === 6, 'six removals are counted');

    // Under load: removals in a loop, and a job of uploaded images (whose inputs the backup
    // must carry for the items it has not run yet) started just before the backup.
    const upload = multipartBody(Array.from({ length: UPLOADS }, (_, i) => ({ name: 'files', filename: `up-${i}.jpg`, contentType: 'image/jpeg', data: small })));
    const uploaded = await send(first.origin, 'POST', '/api/v1/jobs/multipart', { headers: { authorization: managed, 'content-type': upload.contentType }, body: upload.body });
    expect(uploaded.status, uploaded.body.toString()).toBe(202);
    const runningId = (JSON.parse(uploaded.body.toString()) as { id: string }).id;
    let loading = true;
    const loadAnswers: number[] = [];
    // Two clients, so that a removal is usually being counted while the copy is read.
    const load = Promise.all(
      [0, 1].map(async () => {
        while (loading) loadAnswers.push((await removeBackgroundOverHttp(first.origin, managed, small)).status);
      }),
    );
    const backup = await runCli(['backup', backupDir, '--with-results'], { env: { CUTOUT_DATA_DIR: dataDir } });
    loading = false;
    await load;
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toMatch(/the database, at migration \d{4}-/);
    expect(backup.stdout).toContain('webhook.key');
    expect(loadAnswers.length).toBeGreaterThan(0);
    expect(loadAnswers.every((status) => status === 200), JSON.stringify(loadAnswers)).toBe(true);
    const manifest = JSON.parse(await readFile(join(backupDir, 'manifest.json'), 'utf8')) as { jobFiles: { files: number; missing: string[] }; database: { countedRemovals: number } };
    expect(manifest.jobFiles.missing).toEqual([]);
    expect(manifest.database.countedRemovals).toBeGreaterThanOrEqual(6);
    // The copy's view of the upload job: every item still to run has its upload in the
    // backup, every item done its result.
    const copy = new SQLite(join(backupDir, 'cutout.sqlite'), { readonly: true });
    const caught = copy.prepare('select state, input_path as input, result_path as result from job_items where job_id = ? order by item_index').all(runningId) as { state: string; input: string | null; result: string | null }[];
    copy.close();
    expect(caught).toHaveLength(UPLOADS);
    for (const item of caught) {
      const file = item.state === 'succeeded' ? item.result : item.input;
      expect(file && existsSync(join(backupDir, file)), `${item.state} item's ${file} in the backup`).toBe(true);
    }
    console.log(`backup caught the upload job's items as: ${caught.map((item) => item.state).join(', ')}; ${loadAnswers.length} removals answered during the backup`);

    // A restore over a database that is there is refused without --force, and changes nothing;
    // meanwhile the first server finishes the upload job.
    const [refused] = await Promise.all([
      runCli(['restore', backupDir], { env: { CUTOUT_DATA_DIR: dataDir } }),
      until(() => jobOf(first, managed, runningId), (job) => job.status === 'done', 'the upload job is done before the first server stops'),
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/exists .*--force/);

    expect((await first.stop(60_000)).code, first.output()).toBe(0);

    await rm(dataDir, { recursive: true, force: true });
    await mkdir(dataDir);
    const restored = await runCli(['restore', backupDir], { env: { CUTOUT_DATA_DIR: dataDir } });
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toMatch(/2 user tokens \(1 revoked\)/);
    expect(restored.stdout).toContain(`${manifest.jobFiles.files} job files`);
    expect(await readFile(join(dataDir, 'webhook.key'))).toEqual(keyBefore);

    const second = await startServer(env);
    try {
      // The old Token IDs: the kept one is exchanged, the revoked one still refused.
      const again = await exchangeOverHttp(second.origin, tokenId);
      const refusedExchange = await send(second.origin, 'POST', '/api/v1/auth/token', { headers: { token: revokedTokenId } });
      expect(refusedExchange.status).toBe(401);

      const finished = await jobOf(second, again, finishedId);
      expect(finished).toMatchObject({ status: 'done', counts: { succeeded: 3, failed: 0 } });
      expect(await resultsOf(second, again, finishedId)).toEqual(finishedResults);

      // Whatever state the backup caught it in, the upload job ends with all four results:
      // done in the copy with its results, or resumed from the uploads the backup carried.
      const resumed = await until(() => jobOf(second, again, runningId), (job) => job.status === 'done', 'the upload job is done after the restore');
      expect(resumed.counts).toMatchObject({ succeeded: UPLOADS, failed: 0 });
      expect(Object.keys(await resultsOf(second, again, runningId)).sort()).toEqual(Array.from({ length: UPLOADS }, (_, i) => `up-${i}.png`).sort());

      // Usage: everything counted before the backup started, and nothing it could not have seen.
      const counted = countedRemovals(dataDir);
      expect(counted).toBeGreaterThanOrEqual(6);
      expect(counted).toBeLessThanOrEqual(6 + loadAnswers.length + UPLOADS);
      expect(query<{ generation: number }>(dataDir, "select webhook_secret_generation as generation from user_tokens where name = 'kept'").generation).toBe(1);
    } finally {
      expect((await second.stop(60_000)).code, second.output()).toBe(0);
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe.concurrent('cutout restore refuses what would lose data, before it writes anything', () => {
  /** A data directory with one token and a webhook key, and its backup. */
  async function backedUp(name: string): Promise<{ dataDir: string; backupDir: string; env: Record<string, string> }> {
    const { dataDir } = await freshDataDir(`cutout-restore-${name}-`, 'before');
    const env = { CUTOUT_DATA_DIR: dataDir };
    const secret = await runCli(['webhook-secret', '--token', 'before'], { env });
    expect(secret.code, secret.stderr).toBe(0);
    const backupDir = join(work, name);
    const backup = await runCli(['backup', backupDir], { env });
    expect(backup.code, backup.stderr).toBe(0);
    return { dataDir, backupDir, env };
  }
  const tokenNames = async (dataDir: string) => {
    const store = await openSqliteStore(dataDir);
    try {
      return (await store.listUserTokens()).map((token) => token.name);
    } finally {
      await store.close();
    }
  };

  it('over a database with --force: the backup\'s content replaces it', { timeout: 90_000 }, async ({ expect }) => {
    const { dataDir, backupDir, env } = await backedUp('force');
    await runCli(['tokens', 'create', '--name', 'after'], { env });
    expect(await tokenNames(dataDir)).toEqual(['before', 'after']);
    const forced = await runCli(['restore', backupDir, '--force'], { env });
    expect(forced.code, forced.stderr).toBe(0);
    expect(await tokenNames(dataDir)).toEqual(['before']);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('a different webhook key in the data directory, and a backup a newer Cutout migrated', { timeout: 90_000 }, async ({ expect }) => {
    const { dataDir, backupDir, env } = await backedUp('refusals');
    const empty = await mkdtemp(join(work, 'empty-'));
    // A data directory with no database but another key: the key is refused.
    await writeFile(join(empty, 'webhook.key'), `${'ab'.repeat(32)}\n`);
    const otherKey = await runCli(['restore', backupDir], { env: { CUTOUT_DATA_DIR: empty } });
    expect(otherKey.code).toBe(2);
    expect(otherKey.stderr).toContain('holds another webhook key');
    expect(existsSync(join(empty, 'cutout.sqlite'))).toBe(false);

    const database = new SQLite(join(backupDir, 'cutout.sqlite'));
    database.prepare('insert into kysely_migration (name, timestamp) values (?, ?)').run('9999-from-a-newer-release', new Date().toISOString());
    database.close();
    await rm(dataDir, { recursive: true, force: true });
    const newer = await runCli(['restore', backupDir], { env });
    expect(newer.code).toBe(2);
    expect(newer.stderr).toContain('migrated by a newer Cutout');
    expect(existsSync(join(dataDir, 'cutout.sqlite'))).toBe(false);
    await rm(empty, { recursive: true, force: true });
  });

  it('cutout backup into a directory that is not empty is refused', { timeout: 60_000 }, async ({ expect }) => {
    const { dataDir } = await freshDataDir('cutout-backup-full-');
    const full = await mkdtemp(join(work, 'full-'));
    await writeFile(join(full, 'something'), 'x');
    const refused = await runCli(['backup', full], { env: { CUTOUT_DATA_DIR: dataDir } });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('is not empty');
    expect(existsSync(join(full, 'cutout.sqlite'))).toBe(false);
    await rm(dataDir, { recursive: true, force: true });
  });
});
