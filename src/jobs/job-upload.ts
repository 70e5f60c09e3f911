import { createHash, type Hash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyMultipartBaseOptions } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { Unzip, UnzipInflate, type UnzipFile } from 'fflate';
import { NATIVE_OPTION_COUNT } from '../api/option-schemas.js';
import { CutoutError } from '../errors.js';
import { multipartLimits } from '../http/form-parts.js';
import type { NewJobItem } from '../store/job-records.js';
import { MAX_JOB_ITEMS } from './job-request.js';
import { jobFolder } from './result-files.js';

/** What one upload may hold. */
export interface UploadLimits {
  /** CUTOUT_MAX_IMAGE_BYTES: one image, uploaded or inflated from an archive. */
  maxImageBytes: number;
  /** CUTOUT_JOB_MAX_UPLOAD_BYTES: every image of the upload together, archives inflated. */
  maxUploadBytes: number;
}

/** An upload read: its form fields, its images (written under the job's folder) and its hash. */
export interface JobUpload {
  fields: Record<string, string>;
  items: NewJobItem[];
  hash: string;
}

/**
 * The `@fastify/multipart` limits of a job upload, for every scope that takes one (the API's
 * and the dashboard's): files up to the whole upload's limit, as many as a job may hold.
 *
 * @example await app.register(multipart, jobUploadLimits(config.jobMaxUploadBytes))
 */
export const jobUploadLimits = (maxUploadBytes: number): FastifyMultipartBaseOptions => multipartLimits(maxUploadBytes, NATIVE_OPTION_COUNT, MAX_JOB_ITEMS, 64 * 1024);

/** Where an uploaded image waits for its turn, relative to the data directory. */
export const inputPath = (jobId: string, index: number): string => `${jobFolder(jobId)}/inputs/${index}`;

/** Archives go through in slices this small, so that one slice inflates to little before the limits are checked. */
const SLICE = 4096;
const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04];

const isArchive = (filename: string | undefined, mimetype: string) => /\.zip$/i.test(filename ?? '') || /^application\/(x-)?zip(-compressed)?$/i.test(mimetype);
const startsLikeZip = (bytes: Uint8Array) => ZIP_MAGIC.every((byte, at) => bytes[at] === byte);
/** The client's id for an uploaded image: its file name without folders or extension. */
const idOf = (name: string) => name.slice(name.lastIndexOf('/') + 1).replace(/\.[^.]*$/, '') || null;

/**
 * Refuses an archive entry whose name could mean a place outside the archive: an absolute
 * path, a drive letter, a backslash, a NUL or a `..` segment. Entry names never become paths
 * here (an image is written as its index), so this refuses the archive as suspect rather
 * than guarding the disk.
 */
function checkEntryName(name: string): void {
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name) || name.includes('\\') || name.includes('\0') || name.split('/').includes('..')) {
    throw new CutoutError('invalid_request', `The archive has an entry named ${JSON.stringify(name.slice(0, 100))}, which points outside it; nothing was kept.`);
  }
}

/**
 * Reads a job's `multipart/form-data` upload: text fields (the output options,
 * `webhook_url`), image file parts, and zip archives (a part named `*.zip` or sent as
 * `application/zip`), whose images are taken out as they stream in. Each image is written to
 * `<data>/jobs/<job>/inputs/<index>` as it is complete. Refused, with nothing of the upload
 * kept (the caller deletes the job's folder): more than 10,000 images, an image over
 * CUTOUT_MAX_IMAGE_BYTES, more than CUTOUT_JOB_MAX_UPLOAD_BYTES in all (inflated), an archive
 * inside an archive, an entry whose name points outside the archive, a corrupt archive.
 *
 * @example const upload = await readJobUpload(request, config.dataDir, jobId, limits)
 */
export async function readJobUpload(request: FastifyRequest, dataDir: string, jobId: string, limits: UploadLimits): Promise<JobUpload> {
  const fields: Record<string, string> = {};
  const items: NewJobItem[] = [];
  const hash = createHash('sha256');
  let total = 0;
  await mkdir(join(dataDir, jobFolder(jobId), 'inputs'), { recursive: true });

  const count = (bytes: number, size: number, name: string) => {
    total += bytes;
    if (size > limits.maxImageBytes) throw new CutoutError('payload_too_large', `${name} is larger than ${limits.maxImageBytes} bytes.`);
    if (total > limits.maxUploadBytes) throw new CutoutError('payload_too_large', `The upload's images come to more than ${limits.maxUploadBytes} bytes (CUTOUT_JOB_MAX_UPLOAD_BYTES).`);
  };
  const keep = async (name: string, bytes: Uint8Array) => {
    if (items.length >= MAX_JOB_ITEMS) throw new CutoutError('invalid_request', `A job may hold at most ${MAX_JOB_ITEMS} images.`);
    const path = inputPath(jobId, items.length);
    items.push({ clientId: idOf(name), imageUrl: null, inputPath: path });
    await writeFile(join(dataDir, path), bytes);
  };

  try {
    for await (const part of request.parts()) {
      if (part.type === 'field') {
        if (typeof part.value === 'string') {
          fields[part.fieldname] = part.value;
          hash.update(`field ${part.fieldname}=${part.value}\n`);
        }
        continue;
      }
      const name = part.filename || `file-${items.length}`;
      hash.update(`file ${part.fieldname} ${name}\n`);
      if (isArchive(part.filename, part.mimetype)) await expandArchive(part.file, hash, count, keep);
      else {
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const chunk of part.file as AsyncIterable<Buffer>) {
          size += chunk.length;
          count(chunk.length, size, name);
          hash.update(chunk);
          chunks.push(chunk);
        }
        if (size === 0) throw new CutoutError('invalid_request', `The file ${name} is empty.`);
        await keep(name, Buffer.concat(chunks));
      }
    }
  } catch (error) {
    if (error instanceof CutoutError || (error as { code?: string }).code) throw error;
    throw new CutoutError('invalid_request', 'The multipart body is malformed (a boundary is missing or the body ends inside a part).', { cause: error });
  }
  if (items.length === 0) throw new CutoutError('invalid_request', 'The upload has no image: send file parts, or a zip archive of images.');
  return { fields, items, hash: hash.digest('hex') };
}

/** Takes an archive's images out as its bytes stream in, through {@link UploadLimits}' checks. */
async function expandArchive(
  stream: AsyncIterable<Buffer>,
  hash: Hash,
  count: (bytes: number, size: number, name: string) => void,
  keep: (name: string, bytes: Uint8Array) => Promise<void>,
): Promise<void> {
  let failure: unknown;
  const complete: { name: string; bytes: Uint8Array }[] = [];
  const unzip = new Unzip((entry: UnzipFile) => {
    try {
      checkEntryName(entry.name);
      const base = entry.name.slice(entry.name.lastIndexOf('/') + 1);
      // Folders, and the files macOS adds beside the real ones.
      if (entry.name.endsWith('/') || entry.name.startsWith('__MACOSX/') || base.startsWith('.')) return;
      if (/\.zip$/i.test(base)) throw new CutoutError('invalid_request', `The archive holds another archive (${base}); send one level of archive.`);
      if (entry.originalSize !== undefined) count(0, entry.originalSize, entry.name);
      const chunks: Uint8Array[] = [];
      let size = 0;
      entry.ondata = (error, chunk, final) => {
        if (failure) return;
        try {
          if (error) throw new CutoutError('invalid_request', `The archive's entry ${entry.name} is corrupt.`, { cause: error });
          size += chunk.length;
          count(chunk.length, size, entry.name);
          chunks.push(chunk);
          if (!final) return;
          const bytes = Buffer.concat(chunks);
          if (startsLikeZip(bytes)) throw new CutoutError('invalid_request', `The archive holds another archive (${entry.name}); send one level of archive.`);
          complete.push({ name: entry.name, bytes });
        } catch (thrown) {
          failure = thrown;
        }
      };
      entry.start();
    } catch (thrown) {
      failure ??= thrown;
    }
  });
  unzip.register(UnzipInflate);
  const step = async (bytes: Uint8Array, final: boolean) => {
    try {
      unzip.push(bytes, final);
    } catch (error) {
      failure ??= new CutoutError('invalid_request', 'The archive is not a readable zip.', { cause: error });
    }
    if (failure) throw failure;
    for (const entry of complete.splice(0)) await keep(entry.name, entry.bytes);
  };
  let seen = false;
  for await (const chunk of stream) {
    seen = true;
    hash.update(chunk);
    for (let at = 0; at < chunk.length; at += SLICE) await step(chunk.subarray(at, at + SLICE), false);
  }
  if (!seen) throw new CutoutError('invalid_request', 'The archive is empty.');
  await step(new Uint8Array(0), true);
}
