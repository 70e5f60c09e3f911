import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { crc32 } from 'node:zlib';
import type { FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZipFile } from 'yazl';
import { readJobUpload } from '../src/jobs/job-upload.js';
import { ModelService } from '../src/model/model-service.js';
import { multipartBody } from '../scripts/lib/multipart-body.js';
import { startTestApp } from './helpers/app.js';
import { makePhoto } from './helpers/images.js';
import { squareSegmenter } from './helpers/square-segmenter.js';

/**
 * Job uploads' zip archives as the tools that matter write them: yazl (ZIP64 forced, and the
 * data descriptors it writes after streamed entries) and Python's zipfile (force_zip64, to a
 * file and to a pipe, where it writes descriptors too), with entries whose data holds the
 * bytes of zip signatures, which a reader that looks for the next signature would cut short.
 */

const dir = mkdtempSync(join(tmpdir(), 'upload-archives-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** The three signatures a streaming reader looks for, with sizes that point nowhere. */
const SIGNATURES = Buffer.from('504b0708000000000000000000000000504b0102504b0304', 'hex');

/** `png` with a tEXt chunk before IEND that holds {@link SIGNATURES}: still a valid PNG. */
function pngHolding(png: Buffer, bytes: Buffer): Buffer {
  const data = Buffer.concat([Buffer.from('Comment\0'), bytes]);
  const body = Buffer.concat([Buffer.from('tEXt'), data]);
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  body.copy(chunk, 4);
  chunk.writeUInt32BE(crc32(body), 8 + data.length);
  const end = png.length - 12;
  return Buffer.concat([png.subarray(0, end), chunk, png.subarray(end)]);
}

interface ArchiveFile {
  name: string;
  bytes: Buffer;
  deflate: boolean;
}

/** A zip made by yazl: streamed entries (data descriptor after the data), the last one from a buffer (sizes in its header). */
async function yazlArchive(files: ArchiveFile[], forceZip64Format: boolean): Promise<Buffer> {
  const zip = new ZipFile();
  for (const [at, file] of files.entries()) {
    const options = { compress: file.deflate, forceZip64Format };
    if (at === files.length - 1) zip.addBuffer(file.bytes, file.name, options);
    else zip.addReadStreamLazy(file.name, options, (opened) => opened(null, Readable.from([file.bytes])));
  }
  zip.end({ forceZip64Format, comment: '' });
  return buffer(zip.outputStream as Readable);
}

/** A zip made by Python's zipfile with force_zip64: to a file (sizes in the headers), or to a pipe (data descriptors). */
function pythonArchive(files: ArchiveFile[], to: 'file' | 'pipe'): Buffer {
  const listed = files.map((file, at) => {
    const path = join(dir, `python-${at}`);
    writeFileSync(path, file.bytes);
    return [file.name, path, file.deflate];
  });
  const script = `
import json, sys, zipfile
out = open(sys.argv[2], 'wb') if sys.argv[2] != '-' else sys.stdout.buffer
with zipfile.ZipFile(out, 'w') as archive:
    for name, path, deflate in json.loads(sys.argv[1]):
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
        with archive.open(info, 'w', force_zip64=True) as entry, open(path, 'rb') as source:
            entry.write(source.read())
`;
  const path = join(dir, 'python.zip');
  const stdout = execFileSync('/usr/bin/python3', ['-c', script, JSON.stringify(listed), to === 'file' ? path : '-']);
  return to === 'file' ? readFileSync(path) : stdout;
}

/** What readJobUpload keeps of a request whose one file part is `archive`, sent in 64 KiB chunks. */
async function upload(archive: Buffer) {
  const chunks = Array.from({ length: Math.ceil(archive.length / 65536) }, (_, n) => archive.subarray(n * 65536, (n + 1) * 65536));
  const request = {
    async *parts() {
      yield { type: 'file', fieldname: 'files', filename: 'photos.zip', mimetype: 'application/zip', file: Readable.from(chunks) };
    },
  } as unknown as FastifyRequest;
  const dataDir = mkdtempSync(join(dir, 'data-'));
  const read = await readJobUpload(request, dataDir, 'job', { maxImageBytes: 1 << 30, maxUploadBytes: 1 << 30 });
  // Digests, not bytes: a deep comparison of 300 KB buffers takes seconds.
  return read.items.map((item) => ({ id: item.clientId, sha256: sha256(readFileSync(join(dataDir, item.inputPath!))) }));
}

let files: ArchiveFile[];
beforeAll(async () => {
  const png = await makePhoto('png', 64, 48);
  const noise = randomBytes(300_000);
  files = [
    { name: 'photos/a.png', bytes: pngHolding(png, SIGNATURES), deflate: false },
    { name: 'photos/b.png', bytes: Buffer.concat([noise.subarray(0, 100_000), SIGNATURES, noise.subarray(100_000)]), deflate: false },
    { name: 'photos/c.png', bytes: Buffer.concat([SIGNATURES, noise]), deflate: true },
    { name: 'd.png', bytes: pngHolding(png, SIGNATURES), deflate: false },
  ];
});
const expected = () => files.map((file) => ({ id: file.name.replace(/^.*\//, '').replace(/\.png$/, ''), sha256: sha256(file.bytes) }));

describe('an upload archive', () => {
  it('made by yazl, ZIP64 forced or not, gives every image whole', async () => {
    for (const zip64 of [false, true]) expect(await upload(await yazlArchive(files, zip64)), `forceZip64Format ${zip64}`).toEqual(expected());
  });

  it("made by Python's zipfile with force_zip64, to a file or to a pipe, gives every image whole", async () => {
    for (const to of ['file', 'pipe'] as const) expect(await upload(pythonArchive(files, to)), to).toEqual(expected());
  });

  it('that is corrupt, truncated or encrypted is refused', async () => {
    const zip = await yazlArchive(files, true);
    const refused = async (archive: Buffer, detail: RegExp) => {
      await expect(upload(archive)).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringMatching(detail) });
    };
    // A byte of the stored noise in b.png, and one of the last entry (sizes in its header), changed.
    for (const at of [zip.indexOf(files[1].bytes.subarray(50_000, 50_040)), zip.lastIndexOf(Buffer.from('IEND')) - 30]) {
      const changed = Buffer.from(zip);
      changed[at] ^= 0xff;
      await refused(changed, /entry (photos\/b|d)\.png is corrupt/);
    }
    await refused(zip.subarray(0, zip.indexOf(SIGNATURES, 200_000) + 10), /not a readable zip/);
    const locked = Buffer.from(zip);
    locked[6] |= 1;
    await refused(locked, /encrypted/);
  });

  it('made by Python with force_zip64 through HTTP becomes a job whose every image succeeds', async () => {
    const t = await startTestApp({ urlAllowPrivate: true, rateLimit: 0 }, { model: ModelService.ofSegmenter(squareSegmenter()) });
    try {
      const auth = await t.managedToken();
      const photos = files.filter((file) => file.name.endsWith('a.png') || file.name.endsWith('d.png'));
      const form = multipartBody([{ name: 'files', filename: 'photos.zip', contentType: 'application/zip', data: pythonArchive(photos, 'pipe') }]);
      const made = await t.app.inject({ method: 'POST', url: '/api/v1/jobs/multipart', headers: { authorization: auth, 'content-type': form.contentType }, payload: form.body });
      expect(made.statusCode, made.body).toBe(202);
      let job = made.json();
      for (const deadline = Date.now() + 20_000; job.status !== 'done' && Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 50))) {
        job = (await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${job.id}`, headers: { authorization: auth } })).json();
      }
      expect([job.status, job.counts.succeeded, job.items.map((item: { id: string }) => item.id)]).toEqual(['done', 2, ['a', 'd']]);
    } finally {
      await t.close();
    }
  });
});
