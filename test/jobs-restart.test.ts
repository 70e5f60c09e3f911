import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { unzipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePhoto } from './helpers/images.js';
import { exchangeOverHttp, freshDataDir, killLeftoverChildren, send, startServer, type ServerProcess } from './processes/server-process.js';
import { until } from './helpers/until.js';

// A job on one node across a graceful restart, on the real thing: `src/main.ts` as a child
// process with the real model, SQLite in a temporary data directory, SIGTERM mid-job, then a
// second process on the same directory. The job must end with every image cut once, its
// results all there, and the usage counting each image once.

const ITEMS = 6;
const TIMEOUT_MS = 240_000;

let photos: Server;
let origin: string;
let dataDir: string;

beforeAll(async () => {
  const photo = await makePhoto('jpeg', 320, 240);
  // `/poison…` never answers: the image stays running until its server dies, as one that runs it out of memory would.
  photos = createServer((request, response) => {
    if (request.url?.startsWith('/poison')) return;
    response.writeHead(200, { 'content-type': 'image/jpeg' }).end(photo);
  });
  await new Promise<void>((resolve) => photos.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(photos.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await killLeftoverChildren();
  await new Promise((resolve) => photos?.close(resolve));
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

interface JobAnswer {
  status: string;
  counts: Record<string, number>;
  items: { index: number; state: string; attempts: number; problem: { code: string } | null }[];
}

async function jobOf(server: ServerProcess, managed: string, id: string): Promise<JobAnswer> {
  const answer = await send(server.origin, 'GET', `/api/v1/jobs/${id}?per_page=100`, { headers: { authorization: managed } });
  expect(answer.status, answer.body.toString()).toBe(200);
  return JSON.parse(answer.body.toString());
}

// The two tests have a data directory and servers of their own, and spend most of their time
// waiting for a server to start: they run at the same time.
describe.concurrent('a job across a graceful restart of its only server', () => {
  it('SIGTERM mid-job: the server exits 0, the next one on the same data directory finishes the job, each image counted once', { timeout: TIMEOUT_MS }, async ({ expect }) => {
    const made = await freshDataDir('cutout-jobs-restart-');
    dataDir = made.dataDir;
    const env = { CUTOUT_DATA_DIR: dataDir, CUTOUT_URL_ALLOW_PRIVATE: 'true', CUTOUT_RATE_LIMIT: '0' };

    const first = await startServer(env);
    const managed = await exchangeOverHttp(first.origin, made.tokenId);
    const images = Array.from({ length: ITEMS }, (_, i) => ({ image_url: `${origin}/photo-${i}.jpg`, id: `sku-${i}` }));
    const created = await send(first.origin, 'POST', '/api/v1/jobs', { headers: { authorization: managed, 'content-type': 'application/json' }, body: JSON.stringify({ images }) });
    expect(created.status, created.body.toString()).toBe(202);
    const { id } = JSON.parse(created.body.toString()) as { id: string };

    // Some images cut, the rest still to do: then the signal.
    const before = await until(() => jobOf(first, managed, id), (job) => job.counts.succeeded >= 2, 'two images are cut');
    expect(before.counts.succeeded).toBeLessThan(ITEMS);
    first.child.kill('SIGTERM');
    const exit = await first.exited;
    expect({ code: exit.code, signal: exit.signal }, first.output()).toEqual({ code: 0, signal: null });

    const second = await startServer(env);
    const done = await until(() => jobOf(second, managed, id), (job) => job.status === 'done', 'the job is done');
    expect(done.counts).toMatchObject({ succeeded: ITEMS, failed: 0, queued: 0, running: 0 });

    const zip = await send(second.origin, 'GET', `/api/v1/jobs/${id}/results`, { headers: { authorization: managed } });
    expect(zip.status).toBe(200);
    const names = Object.keys(unzipSync(new Uint8Array(zip.body))).sort();
    expect(names).toEqual(images.map((image) => `${image.id}.png`).sort());
    const stopped = await second.stop(60_000);
    expect(stopped.code, second.output()).toBe(0);

    const database = new SQLite(join(dataDir, 'cutout.sqlite'), { readonly: true });
    try {
      expect(database.prepare('select coalesce(sum(succeeded), 0) as succeeded, coalesce(sum(failed), 0) as failed from usage_daily').get()).toEqual({ succeeded: ITEMS, failed: 0 });
    } finally {
      database.close();
    }
  });

  it('an image whose server is SIGKILLed at each start fails alone with too_many_starts after 5 starts; the job goes on and ends done', { timeout: TIMEOUT_MS }, async ({ expect }) => {
    const made = await freshDataDir('cutout-jobs-poison-');
    const env = { CUTOUT_DATA_DIR: made.dataDir, CUTOUT_URL_ALLOW_PRIVATE: 'true', CUTOUT_RATE_LIMIT: '0' };
    let server = await startServer(env);
    try {
      const managed = await exchangeOverHttp(server.origin, made.tokenId);
      const images = [{ image_url: `${origin}/poison.jpg` }, ...Array.from({ length: 3 }, (_, i) => ({ image_url: `${origin}/photo-${i}.jpg` }))];
      const created = await send(server.origin, 'POST', '/api/v1/jobs', { headers: { authorization: managed, 'content-type': 'application/json' }, body: JSON.stringify({ images }) });
      expect(created.status, created.body.toString()).toBe(202);
      const { id } = JSON.parse(created.body.toString()) as { id: string };

      // Killed six times at most, each time while the poison runs: it may not start a sixth time.
      let kills = 0;
      for (; kills < 6; kills++) {
        const job = await until(() => jobOf(server, managed, id), (job) => job.items[0]!.state !== 'queued', 'the poison image to start or end');
        if (job.items[0]!.state !== 'running') break;
        expect(job.items[0]!.attempts).toBe(kills + 1);
        server.child.kill('SIGKILL');
        await server.exited;
        server = await startServer(env);
      }
      expect(kills).toBe(5);
      const done = await until(() => jobOf(server, managed, id), (job) => job.status === 'done', 'the job to be done');
      expect(done.counts).toMatchObject({ succeeded: 3, failed: 1, queued: 0, running: 0 });
      expect(done.items[0]).toMatchObject({ state: 'failed', attempts: 5, problem: { code: 'too_many_starts' } });
      expect(done.items.slice(1).every((item) => item.state === 'succeeded')).toBe(true);
      expect((await server.stop(60_000)).code, server.output()).toBe(0);
      const database = new SQLite(join(made.dataDir, 'cutout.sqlite'), { readonly: true });
      try {
        expect(database.prepare('select coalesce(sum(succeeded), 0) as succeeded, coalesce(sum(failed), 0) as failed from usage_daily').get()).toEqual({ succeeded: 3, failed: 1 });
      } finally {
        database.close();
      }
    } finally {
      server.child.kill('SIGKILL');
      await rm(made.dataDir, { recursive: true, force: true });
    }
  });
});
