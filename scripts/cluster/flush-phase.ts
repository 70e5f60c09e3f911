import { readdir, readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { json, request } from './http.js';
import { drawnPhoto, servePhotos } from './jobs-phase.js';
import type { Replica } from './replica.js';
import { sleep } from './shell.js';

/** What the flush phase needs of the cluster. */
export interface FlushPhaseParts {
  /** The replicas that work on the job; both must be running. */
  workers: [Replica, Replica];
  /** A managed token of a user token used for nothing else. */
  managedToken: string;
  userTokenId: string;
  dataDir: string;
  postgresUrl: string;
  /** The cluster's Redis, as the host reaches it: the one flushed. */
  redisUrl: string;
  photoFiles: string[];
  items: number;
  /** The replicas' CUTOUT_JOB_RECONCILE_MS: the longest a flushed queue waits for reconciliation. */
  reconcileMs: number;
  say(line: string): void;
  check(what: string, ok: boolean): void;
}

/** What the phase measured. */
export interface FlushPhaseFigures {
  items: number;
  succeededAtFlush: number;
  /** From the flush to the job's end, and what the images left would have taken at the rate before it. */
  secondsAfterFlush: number;
  remainingWorkSeconds: number;
}

/** The delay a flush may cost on top of the work left (the jobs' promise: within 2 minutes). */
const FLUSH_ALLOWANCE_S = 120;

/**
 * Phase 6 of `npm run cluster`: a Redis that forgets. A job of `items` images on two
 * replicas; once a fifth is done, `FLUSHDB` empties the cluster's Redis (queue, locks, job
 * schedulers: everything BullMQ knew). The store is the truth: reconciliation adds the
 * waiting images again. Checks that the job ends with every image once, counted once, its
 * result there once, no replica restarted, within 2 minutes of the flush plus the work left.
 */
export async function runFlushPhase(parts: FlushPhaseParts): Promise<FlushPhaseFigures> {
  const { workers, managedToken, items, say, check } = parts;
  const [first] = workers;
  const startsBefore = workers.map((replica) => replica.starts.length);
  const photos = parts.photoFiles.length > 0 ? await Promise.all(parts.photoFiles.map((file) => readFile(file))) : [await drawnPhoto()];
  const server = await servePhotos(photos);
  const port = (server.address() as AddressInfo).port;
  const db = new pg.Client({ connectionString: parts.postgresUrl });
  await db.connect();
  const redis = new Redis(parts.redisUrl, { maxRetriesPerRequest: 1 });
  try {
    const images = Array.from({ length: items }, (_, index) => ({ image_url: `http://${first.address.servicesHost}:${port}/photo/${index}.jpg`, id: `flushed-${index}` }));
    const startedAt = performance.now();
    const made = await request(first.origin, 'POST', '/api/v1/jobs', { headers: { authorization: managedToken, 'content-type': 'application/json' }, body: JSON.stringify({ images, format: 'png' }) });
    const id = json<{ id: string }>(made)?.id;
    check(`a job of ${items} images made at ${first.name} (${made.status})`, made.status === 202 && id !== undefined);
    if (!id) return { items, succeededAtFlush: 0, secondsAfterFlush: 0, remainingWorkSeconds: 0 };
    const counts = async () => {
      const answer = json<{ status: string; counts: Record<string, number> }>(await request(first.origin, 'GET', `/api/v1/jobs/${id}?per_page=1`, { headers: { authorization: managedToken } }));
      return answer ?? { status: 'unknown', counts: {} };
    };

    const flushAfter = Math.max(2, Math.ceil(items / 5));
    while ((await counts()).counts.succeeded < flushAfter) await sleep(100);
    const succeededAtFlush = (await counts()).counts.succeeded;
    const rate = succeededAtFlush / ((performance.now() - startedAt) / 1000);
    const keysBefore = await redis.dbsize();
    await redis.flushdb();
    const flushedAt = performance.now();
    say(`${succeededAtFlush} of ${items} done: FLUSHDB on the cluster's Redis (${keysBefore} keys)`);
    const remainingWorkSeconds = (items - succeededAtFlush) / rate;
    const deadline = flushedAt + (FLUSH_ALLOWANCE_S + 2 * remainingWorkSeconds + parts.reconcileMs / 1000) * 1000;
    let job = await counts();
    while ((job.status === 'queued' || job.status === 'running') && performance.now() < deadline) {
      await sleep(1000);
      job = await counts();
    }
    const secondsAfterFlush = (performance.now() - flushedAt) / 1000;
    check(`the job ended ${job.status} with ${job.counts.succeeded} of ${items} succeeded (${JSON.stringify(job.counts)})`, job.status === 'done' && job.counts.succeeded === items);
    check(
      `it ended ${secondsAfterFlush.toFixed(1)} s after the flush: within ${FLUSH_ALLOWANCE_S} s plus the ${remainingWorkSeconds.toFixed(1)} s of work left at ${rate.toFixed(2)} images/s`,
      secondsAfterFlush <= FLUSH_ALLOWANCE_S + remainingWorkSeconds,
    );
    const usage = await db.query<{ succeeded: string }>('select coalesce(sum(succeeded), 0) as succeeded from usage_daily where user_token_id = $1', [parts.userTokenId]);
    check(`the token's usage counts ${Number(usage.rows[0]?.succeeded ?? 0)} images for ${items}`, Number(usage.rows[0]?.succeeded ?? 0) === items);
    const files = (await readdir(join(parts.dataDir, 'jobs', id))).filter((file) => !file.endsWith('.partial'));
    check(`${files.length} result files for ${items} images`, files.length === items);
    const restarted = workers.filter((replica, at) => replica.starts.length !== startsBefore[at] || !replica.running).map((replica) => replica.name);
    check(`no replica restarted or stopped (${restarted.join(', ') || 'none'})`, restarted.length === 0);
    say(`Redis flushed mid-job: ${items - succeededAtFlush} images after the flush in ${secondsAfterFlush.toFixed(1)} s (their work alone: ${remainingWorkSeconds.toFixed(1)} s)`);
    return { items, succeededAtFlush, secondsAfterFlush, remainingWorkSeconds };
  } finally {
    redis.disconnect();
    await db.end();
    server.close();
  }
}
