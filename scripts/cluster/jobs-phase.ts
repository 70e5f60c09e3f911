import { readdir, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import sharp from 'sharp';
import { json, request } from './http.js';
import type { Replica } from './replica.js';
import { sleep } from './shell.js';

/** What the jobs phase needs of the cluster. */
export interface JobsPhaseParts {
  /** The replicas that work on the job; the second is killed with SIGKILL part-way. */
  workers: [Replica, Replica];
  /** A managed token of a user token used for nothing else (its usage is the job's). */
  managedToken: string;
  userTokenId: string;
  /** The cluster's data directory, shared by the replicas. */
  dataDir: string;
  postgresUrl: string;
  /** Photos to serve, one per item in turn; empty: a drawn one. */
  photoFiles: string[];
  items: number;
  say(line: string): void;
  check(what: string, ok: boolean): void;
}

/** What the phase measured. */
export interface JobsPhaseFigures {
  items: number;
  succeededAtKill: number;
  seconds: number;
  itemsPerSecond: number;
  redone: number;
}

/**
 * Phase 5 of `npm run cluster`: a job of `items` images, served by a local HTTP server,
 * worked on by two replicas through BullMQ; the second is killed with SIGKILL once a tenth
 * of the items are done, while it holds one. Checks that the job ends with every item succeeded, each counted
 * once in the token's usage, and each result file there once in the shared data directory.
 */
export async function runJobsPhase(parts: JobsPhaseParts): Promise<JobsPhaseFigures> {
  const { workers, managedToken, items, say, check } = parts;
  const [first, doomed] = workers;
  const photos = parts.photoFiles.length > 0 ? await Promise.all(parts.photoFiles.map((file) => readFile(file))) : [await drawnPhoto()];
  const server = await servePhotos(photos);
  const port = (server.address() as AddressInfo).port;
  const db = new pg.Client({ connectionString: parts.postgresUrl });
  await db.connect();
  try {
    // Every replica reaches the host at the first one's services address (network.ts routes them).
    const images = Array.from({ length: items }, (_, index) => ({ image_url: `http://${first.address.servicesHost}:${port}/photo/${index}.jpg`, id: `item-${index}` }));
    const headers = { authorization: managedToken, 'content-type': 'application/json' };
    const startedAt = performance.now();
    const made = await request(first.origin, 'POST', '/api/v1/jobs', { headers, body: JSON.stringify({ images, format: 'png' }) });
    const id = json<{ id: string }>(made)?.id;
    check(`a job of ${items} images made at ${first.name} (${made.status})`, made.status === 202 && id !== undefined);
    if (!id) return { items, succeededAtKill: 0, seconds: 0, itemsPerSecond: 0, redone: 0 };

    const counts = async () => {
      const answer = json<{ status: string; counts: Record<string, number> }>(await request(first.origin, 'GET', `/api/v1/jobs/${id}?per_page=1`, { headers: { authorization: managedToken } }));
      return answer ?? { status: 'unknown', counts: {} };
    };
    // Killed once a tenth is done, at a moment both replicas hold an item (each works on one at
    // a time), so that the doomed one dies mid-item rather than between two.
    const killAfter = Math.max(2, Math.ceil(items / 10));
    for (;;) {
      const { counts: now } = await counts();
      if (now.succeeded >= killAfter && now.running === 2) break;
      await sleep(100);
    }
    const exit = await doomed.stop('SIGKILL');
    const succeededAtKill = (await counts()).counts.succeeded;
    say(`${succeededAtKill} of ${items} done: killed ${doomed.name} (${JSON.stringify(exit)})`);

    let job = await counts();
    while (job.status === 'queued' || job.status === 'running') {
      await sleep(1000);
      job = await counts();
    }
    const seconds = (performance.now() - startedAt) / 1000;
    check(`the job ended ${job.status} with ${job.counts.succeeded} of ${items} succeeded (${JSON.stringify(job.counts)})`, job.status === 'done' && job.counts.succeeded === items);

    const rows = await db.query<{ attempts: number; state: string }>('select attempts, state from job_items where job_id = $1', [id]);
    const redone = rows.rows.filter((row) => Number(row.attempts) > 1).length;
    const usage = await db.query<{ succeeded: string }>('select coalesce(sum(succeeded), 0) as succeeded from usage_daily where user_token_id = $1', [parts.userTokenId]);
    const counted = Number(usage.rows[0]?.succeeded ?? 0);
    check(`the token's usage counts ${counted} images for ${items} items, ${redone} of them started twice or more`, counted === items);
    check(`the image ${doomed.name} held when it was killed was taken over by ${first.name} (${redone} started again)`, redone >= 1);
    const files = await readdir(join(parts.dataDir, 'jobs', id));
    const results = files.filter((file) => !file.endsWith('.partial'));
    const expected = new Set(Array.from({ length: items }, (_, index) => `${index}.png`));
    check(
      `${results.length} result files for ${items} items, one per item (${files.length - results.length} partial files left by the kill)`,
      results.length === items && results.every((file) => expected.has(file)),
    );
    const itemsPerSecond = items / seconds;
    say(`jobs across replicas: ${items} items in ${seconds.toFixed(1)} s (${itemsPerSecond.toFixed(2)} items/s), ${succeededAtKill} done at the kill, ${redone} redone`);
    return { items, succeededAtKill, seconds, itemsPerSecond, redone };
  } finally {
    await db.end();
    server.close();
  }
}

/** An HTTP server on every address of the host that hands out `/photo/<n>.jpg` as photo n modulo their number. */
export async function servePhotos(photos: Buffer[]): Promise<Server> {
  const server = createServer((req, res) => {
    const match = /^\/photo\/(\d+)\.jpg$/.exec(req.url ?? '');
    if (!match) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'image/jpeg' }).end(photos[Number(match[1]) % photos.length]);
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  return server;
}

/** A small photo drawn here, for machines without the shared fixtures. */
export function drawnPhoto(): Promise<Buffer> {
  return sharp({ create: { width: 480, height: 360, channels: 3, background: { r: 230, g: 235, b: 240 } } })
    .composite([{ input: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="480" height="360"><circle cx="240" cy="180" r="110" fill="#e8761a"/></svg>') }])
    .jpeg()
    .toBuffer();
}
