import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeCommand } from '../src/cli/remove-command.js';
import { ModelService } from '../src/model/model-service.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { makePhoto } from './helpers/images.js';
import { squareSegmenter } from './helpers/square-segmenter.js';

/** `cutout remove --job`, in process, against a listening app with a tiny model. */

describe('cutout remove --job', () => {
  let t: TestApp;
  let photos: Server;
  let base: string;
  let origin: string;
  let tokenId: string;
  let work: string;

  beforeAll(async () => {
    const png = await makePhoto('png', 40, 30);
    photos = createServer((request, response) => (request.url?.startsWith('/photo/') ? response.writeHead(200, { 'content-type': 'image/png' }).end(png) : response.writeHead(404).end()));
    await new Promise<void>((resolve) => photos.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(photos.address() as AddressInfo).port}`;
    t = await startTestApp({ urlAllowPrivate: true, rateLimit: 0 }, { model: ModelService.ofSegmenter(squareSegmenter()) });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    tokenId = (await t.tokens.createUserToken('cli-jobs')).tokenId;
    work = await mkdtemp(join(tmpdir(), 'cutout-cli-job-'));
    await mkdir(join(work, 'photos', 'shoes'), { recursive: true });
    await writeFile(join(work, 'photos', 'front.png'), png);
    await writeFile(join(work, 'photos', 'shoes', 'side.png'), png);
  });
  afterAll(async () => {
    photos?.close();
    await t?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('sends files and URLs as jobs, writes every result where a single request would, and reports the failures', async () => {
    const stdout = new PassThrough();
    let printed = '';
    stdout.on('data', (chunk) => (printed += chunk));
    const out = join(work, 'out');
    const status = await removeCommand(
      [join(work, 'photos'), `${base}/photo/boot.png`, `${base}/missing.png`, '-o', out, '--job', '--format', 'webp', '--max-width', '20', '--url', origin, '--token-id', tokenId],
      {},
      { stdout, stderr: new PassThrough() },
    );
    expect(status, printed).toBe(1);
    expect((await readdir(out, { recursive: true })).sort()).toEqual(['boot.webp', 'front.webp', 'shoes', 'shoes/side.webp']);
    const side = await sharp(join(out, 'shoes', 'side.webp')).metadata();
    expect([side.format, side.width]).toEqual(['webp', 20]);
    expect(printed).toMatch(/failed .*missing\.png.*upstream_fetch_failed/);
    expect(printed).toMatch(/written +.*front\.png/);
  });
});
