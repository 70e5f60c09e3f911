import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { jobsCommand } from '../src/cli/jobs-command.js';
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

  it('cutout jobs lists the account\'s jobs, shows one with its failed images, and cancels; an unknown job is 1 with the server\'s problem', async () => {
    const printed: string[] = [];
    const errors: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((line: string) => void printed.push(line));
    const error = vi.spyOn(console, 'error').mockImplementation((line: string) => void errors.push(line));
    try {
      const server = ['--url', origin, '--token-id', tokenId];
      expect(await jobsCommand(['list', ...server], {})).toBe(0);
      const rows = printed.slice(1).map((line) => line.split(/\s+/));
      expect(printed[0]).toMatch(/^ID +STATUS +DONE +FAILED +CREATED$/);
      // The test before made two jobs: the URLs' (one failed) and the files'.
      expect(rows.map((row) => row[1])).toEqual(['done', 'done']);
      const urls = rows.find((row) => row[3] === '1')!;
      expect(urls[2]).toBe('2/2');

      printed.length = 0;
      expect(await jobsCommand(['show', urls[0]], { CUTOUT_URL: origin, CUTOUT_TOKEN_ID: tokenId })).toBe(0);
      expect(printed.join('\n')).toMatch(/\nFailed images:\nINDEX +ID +CODE +DETAIL\n1 +3 +upstream_fetch_failed +image_url answered HTTP 404\.$/);

      printed.length = 0;
      expect(await jobsCommand(['cancel', urls[0], ...server], {})).toBe(0);
      expect(printed[1].split(/\s+/)[1]).toBe('done'); // a finished job stays as it was
      expect(await jobsCommand(['show', 'job_nothing', ...server], {})).toBe(1);
      expect(errors.at(-1)).toMatch(/^cutout: 404 not_found: /);
      await expect(jobsCommand(['show', ...server], {})).rejects.toThrow(/needs a job id/);
      await expect(jobsCommand(['list'], {})).rejects.toThrow(/needs a Token ID/);
    } finally {
      log.mockRestore();
      error.mockRestore();
    }
  });
});
