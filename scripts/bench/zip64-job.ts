import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { multipartBody } from '../lib/multipart-body.js';
import { httpRequest } from './http-load.js';
import type { CutoutServer } from '../lib/server-process.js';

/** The server settings the ZIP64 job needs: its background is fetched from this machine and is larger than a photo, its upload larger than 2 GiB. */
export const ZIP64_SERVER_ENV = { CUTOUT_URL_ALLOW_PRIVATE: 'true', CUTOUT_MAX_IMAGE_BYTES: String(128 * 2 ** 20), CUTOUT_JOB_MAX_UPLOAD_BYTES: String(8 * 2 ** 30) };

/** What the ZIP64 job did, as written to bench/results/. */
export interface Zip64JobResult {
  photos: { count: number; width: number; height: number; uploadBytes: number };
  jobSeconds: number;
  succeeded: number;
  failed: number;
  resultBytes: number;
  zipBytes: number;
  downloadSeconds: number;
  /** The archive ends with a ZIP64 end-of-central-directory locator. */
  zip64: boolean;
  python: { entries: number; corrupt: string | null };
  unzip: { exitCode: number; summary: string };
  verdict: 'pass' | 'fail';
}

const execFileAsync = promisify(execFile);

/**
 * `count` photos of `width` × `height` made from the fixtures' photos (round-robin), scaled up
 * and given a film grain (gaussian noise, sigma 24) before a JPEG at quality 95, so that their
 * subjects do not compress away in a PNG. Made in the run's own folder (about 1 GB), which
 * goes with it.
 */
async function grainyPhotos(root: string, work: string, count: number, width: number, height: number): Promise<string> {
  const sources = join(root, '../shared/fixtures/photos');
  const names = (await readdir(sources)).filter((name) => name.endsWith('.jpg')).sort();
  const dir = join(work, 'zip64-photos');
  await mkdir(dir, { recursive: true });
  for (let i = 0; i < count; i++) {
    const path = join(dir, `photo-${String(i).padStart(3, '0')}.jpg`);
    if (existsSync(path)) continue;
    const first = join(dir, `photo-${String(i % names.length).padStart(3, '0')}.jpg`);
    if (i >= names.length) {
      await pipeline(createReadStream(first), createWriteStream(path));
      continue;
    }
    const scaled = await sharp(join(sources, names[i])).autoOrient().resize(width, height, { fit: 'cover' }).removeAlpha().raw().toBuffer();
    const grain = { create: { width, height, channels: 3 as const, background: '#808080', noise: { type: 'gaussian' as const, mean: 128, sigma: 24 } } };
    await sharp(scaled, { raw: { width, height, channels: 3 } }).composite([{ input: grain, blend: 'overlay' }]).jpeg({ quality: 95 }).toFile(path);
  }
  return dir;
}

/** A background of random pixels, which no PNG compresses: every result is about its raw size. */
async function noiseBackground(path: string, width: number, height: number): Promise<void> {
  await sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } }).png({ compressionLevel: 0 }).toFile(path);
}

/** Every entry of the zip read by Python's zipfile (testzip checks each CRC), and `unzip -t`. */
async function checkZip(path: string): Promise<Pick<Zip64JobResult, 'python' | 'unzip' | 'zip64'> & { resultBytes: number }> {
  const script = `
import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as archive:
    infos = archive.infolist()
    print(json.dumps({"entries": len(infos), "bytes": sum(i.file_size for i in infos), "corrupt": archive.testzip()}))
`;
  const python = JSON.parse((await execFileAsync('python3', ['-c', script, path], { maxBuffer: 1 << 20 })).stdout) as { entries: number; bytes: number; corrupt: string | null };
  let unzip: Zip64JobResult['unzip'];
  try {
    const { stdout } = await execFileAsync('unzip', ['-t', path], { maxBuffer: 16 << 20 });
    unzip = { exitCode: 0, summary: stdout.trim().split('\n').at(-1) ?? '' };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    unzip = { exitCode: failed.code ?? -1, summary: `${failed.stdout ?? ''}${failed.stderr ?? ''}`.trim().split('\n').slice(-3).join(' / ') };
  }
  const file = await open(path);
  try {
    const tail = Buffer.alloc(42);
    await file.read(tail, 0, 42, (await file.stat()).size - 42);
    return { python: { entries: python.entries, corrupt: python.corrupt }, unzip, resultBytes: python.bytes, zip64: tail.readUInt32LE(0) === 0x07064b50 && tail.readUInt32LE(20) === 0x06054b50 };
  } finally {
    await file.close();
  }
}

/**
 * One job of `count` grainy photos of `width` × `height` uploaded as files, each result a PNG
 * over an opaque background of random pixels (fetched by `bg_image_url` from a server here),
 * so that the results pass 4 GiB; waits for it, downloads its results zip to `work` and
 * checks every entry with Python's zipfile and `unzip -t`. The zip is deleted afterwards, the
 * photos with `work`.
 */
export async function runZip64Job(root: string, server: CutoutServer, work: string, { count, width, height }: { count: number; width: number; height: number }, log: (line: string) => void): Promise<Zip64JobResult> {
  const folder = await grainyPhotos(root, work, count, width, height);
  const background = join(work, 'noise.png');
  await noiseBackground(background, width, height);
  const files = (await readdir(folder)).filter((name) => name.endsWith('.jpg')).sort().slice(0, count);
  log(`photos: ${files.length} of ${width} × ${height} in ${folder}`);

  const backgroundServer = createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'image/png' });
    createReadStream(background)
      .on('error', (error) => response.destroy(error))
      .pipe(response);
  });
  await new Promise<void>((resolve) => backgroundServer.listen(0, '127.0.0.1', resolve));
  const zipPath = join(work, 'results.zip');
  try {
    const backgroundUrl = `http://127.0.0.1:${(backgroundServer.address() as AddressInfo).port}/noise.png`;
    const parts = await Promise.all(files.map(async (name) => ({ name: 'files', filename: name, contentType: 'image/jpeg', data: await readFile(join(folder, name)) })));
    const { body, contentType } = multipartBody([...parts, { name: 'format', data: 'png' }, { name: 'bg_image_url', data: backgroundUrl }]);
    const started = performance.now();
    const made = await httpRequest(`${server.baseUrl}/api/v1/jobs/multipart`, { method: 'POST', headers: { authorization: server.managedToken, 'content-type': contentType }, body, timeoutMs: 600_000 });
    if (made.status !== 202) throw new Error(`the job was refused: ${made.status} ${made.body.toString()}`);
    const jobId = (JSON.parse(made.body.toString()) as { id: string }).id;
    log(`job ${jobId}: ${files.length} photos uploaded (${(body.length / 2 ** 20).toFixed(0)} MiB)`);
    let job: { status: string; counts: Record<string, number> };
    for (let polled = 0; ; polled++) {
      job = JSON.parse((await httpRequest(`${server.baseUrl}/api/v1/jobs/${jobId}?per_page=1`, { headers: { authorization: server.managedToken } })).body.toString());
      if (['done', 'cancelled'].includes(job.status)) break;
      if (polled % 12 === 0) log(`  ${job.counts.succeeded ?? 0} succeeded, ${job.counts.failed ?? 0} failed`);
      await new Promise((resolve) => setTimeout(resolve, 5000));
    }
    const jobSeconds = (performance.now() - started) / 1000;
    log(`job ${job.status} in ${jobSeconds.toFixed(0)} s: ${job.counts.succeeded} succeeded, ${job.counts.failed} failed`);

    const downloadStarted = performance.now();
    const answer = await fetch(`${server.baseUrl}/api/v1/jobs/${jobId}/results`, { headers: { authorization: server.managedToken } });
    if (answer.status !== 200 || !answer.body) throw new Error(`GET results answered ${answer.status}`);
    await pipeline(Readable.fromWeb(answer.body as import('node:stream/web').ReadableStream), createWriteStream(zipPath));
    const downloadSeconds = (performance.now() - downloadStarted) / 1000;
    const zipBytes = (await stat(zipPath)).size;
    log(`zip: ${(zipBytes / 2 ** 30).toFixed(2)} GiB in ${downloadSeconds.toFixed(0)} s; checking it with Python's zipfile and unzip -t`);

    const checked = await checkZip(zipPath);
    const pass =
      checked.python.entries === job.counts.succeeded && job.counts.succeeded === files.length && checked.python.corrupt === null && checked.unzip.exitCode === 0 && checked.resultBytes > 4.2 * 2 ** 30;
    return {
      photos: { count: files.length, width, height, uploadBytes: body.length },
      jobSeconds,
      succeeded: job.counts.succeeded ?? 0,
      failed: job.counts.failed ?? 0,
      resultBytes: checked.resultBytes,
      zipBytes,
      downloadSeconds,
      zip64: checked.zip64,
      python: checked.python,
      unzip: checked.unzip,
      verdict: pass ? 'pass' : 'fail',
    };
  } finally {
    backgroundServer.close();
    await rm(zipPath, { force: true });
  }
}
