import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { unzipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CutoutApiError, CutoutClient } from '@cutout/client';
import { ModelService } from '../../src/model/model-service.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { makePhoto } from '../helpers/images.js';
import { squareSegmenter } from '../helpers/square-segmenter.js';

/** The SDK's `jobs` against a listening app with a tiny model, fetching photos from a local server. */

describe('the SDK\'s jobs', () => {
  const segmenter = squareSegmenter();
  let t: TestApp;
  let photos: Server;
  let base: string;
  let client: CutoutClient;

  beforeAll(async () => {
    const png = await makePhoto('png', 40, 30);
    photos = createServer((request, response) => (request.url?.startsWith('/photo/') ? response.writeHead(200, { 'content-type': 'image/png' }).end(png) : response.writeHead(404).end()));
    await new Promise<void>((resolve) => photos.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(photos.address() as AddressInfo).port}`;
    t = await startTestApp({ urlAllowPrivate: true, rateLimit: 0 }, { model: ModelService.ofSegmenter(segmenter) });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    client = new CutoutClient({ baseUrl: origin, tokenId: (await t.tokens.createUserToken('sdk-jobs')).tokenId, retry: false });
  });
  afterAll(async () => {
    photos?.close();
    await t?.close();
  });

  it('makes a job, waits for it, and downloads its results one by one and as one zip', async () => {
    const job = await client.jobs.create([{ url: `${base}/photo/a.png`, id: 'sku-1' }, `${base}/photo/b.png`, `${base}/missing.png`], { format: 'webp' });
    expect(job).toMatchObject({ status: 'queued', counts: { total: 3 }, options: { format: 'webp' } });
    const seen: number[] = [];
    const done = await client.jobs.wait(job.id, { intervalMs: 20, onProgress: (progress) => seen.push(progress.counts.succeeded + progress.counts.failed) });
    expect(done.counts).toMatchObject({ succeeded: 2, failed: 1 });
    // Told at each poll, the last one the finished job; never going back.
    expect(seen.at(-1)).toBe(3);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    const page = await client.jobs.get(job.id, { perPage: 2 });
    expect([page.items.map((item) => item.id), page.more]).toEqual([['sku-1', null], true]);
    const last = await client.jobs.get(job.id, { page: 2, perPage: 2 });
    expect([last.items[0].state, last.items[0].problem?.code, last.more]).toEqual(['failed', 'upstream_fetch_failed', false]);
    const one = await client.jobs.item(job.id, 0);
    expect(one.contentType).toBe('image/webp');
    expect(Object.keys(unzipSync(await client.jobs.download(job.id))).sort()).toEqual(['1.webp', 'sku-1.webp']);
    const refused = await client.jobs.item(job.id, 2).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CutoutApiError);
    expect((refused as CutoutApiError).code).toBe('result_not_available');
  });

  it('answers the same job for the same idempotency key, and cancels one', async () => {
    segmenter.hold();
    try {
      const images = [`${base}/photo/c.png`, `${base}/photo/d.png`];
      const first = await client.jobs.create(images, { idempotencyKey: 'sdk-1' });
      expect((await client.jobs.create(images, { idempotencyKey: 'sdk-1' })).id).toBe(first.id);
      const cancelled = await client.jobs.cancel(first.id);
      expect(cancelled.status).toBe('cancelled');
      expect(cancelled.counts.cancelled).toBe(2);
    } finally {
      segmenter.release();
    }
  });
});
