import { createHash, type Hash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { FastifyMultipartBaseOptions } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { Inflate } from 'fflate';
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
  const complete: { name: string; bytes: Uint8Array }[] = [];
  const archive = new StreamedZip((name, declaredSize) => {
    checkEntryName(name);
    const base = name.slice(name.lastIndexOf('/') + 1);
    // Folders, and the files macOS adds beside the real ones.
    if (name.endsWith('/') || name.startsWith('__MACOSX/') || base.startsWith('.')) return undefined;
    if (/\.zip$/i.test(base)) throw new CutoutError('invalid_request', `The archive holds another archive (${base}); send one level of archive.`);
    if (declaredSize !== undefined) count(0, declaredSize, name);
    const chunks: Uint8Array[] = [];
    let size = 0;
    return {
      data(chunk) {
        size += chunk.length;
        count(chunk.length, size, name);
        chunks.push(chunk);
      },
      end() {
        const bytes = Buffer.concat(chunks);
        if (startsLikeZip(bytes)) throw new CutoutError('invalid_request', `The archive holds another archive (${name}); send one level of archive.`);
        complete.push({ name, bytes });
      },
    };
  });
  const step = async (bytes: Uint8Array, final: boolean) => {
    try {
      archive.push(bytes, final);
    } catch (error) {
      if (error instanceof CutoutError) throw error;
      throw new CutoutError('invalid_request', 'The archive is not a readable zip.', { cause: error });
    }
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

/** Where the bytes of one archive entry go as they are inflated; `end` after the last. */
interface EntrySink {
  data(chunk: Uint8Array): void;
  end(): void;
}

const LOCAL_HEADER = 0x04034b50;
const CENTRAL_HEADER = 0x02014b50;
const DATA_DESCRIPTOR = 0x08074b50;
const ENDS = [CENTRAL_HEADER, 0x06054b50, 0x06064b50];
/** A data descriptor's possible shapes, most likely first: length, with its signature, 64-bit sizes. */
const DESCRIPTORS = [
  { length: 24, signed: true, wide: true },
  { length: 16, signed: true, wide: false },
  { length: 20, signed: false, wide: true },
  { length: 12, signed: false, wide: false },
];
/** The longest descriptor and the next header's signature: what is held back while looking for the end of an entry. */
const HELD_BACK = 28;
const NEXT_HEADERS = [Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.from([0x50, 0x4b, 0x01, 0x02])];

interface OpenEntry {
  name: string;
  sink: EntrySink | undefined;
  inflate: Inflate | undefined;
  /** Compressed bytes still to come, when the local header says (no data descriptor). */
  remaining: number | undefined;
  expectedCrc: number;
  expectedSize: number | undefined;
  /** Compressed bytes passed on so far. */
  read: number;
  crc: number;
  size: number;
}

/**
 * A zip read front to back as its bytes arrive (an upload is never whole in memory), from
 * its local headers; the central directory is not needed. An entry's data ends where its
 * local header's compressed size says (read from the ZIP64 extra field where the header's
 * fields are 0xFFFFFFFF), or, when a data descriptor follows the data (flag bit 3), where a
 * descriptor (with or without its signature, with 32 or 64-bit sizes: yazl writes 64-bit
 * ones past 4 GiB without a ZIP64 header) whose compressed size is the count of bytes so far
 * is followed by the next header. A signature alone is not an end: fflate's `Unzip` ended
 * an entry at the first `PK\x07\x08` or `PK\x01\x02` in its data, which random bytes (a
 * PNG's, stored) hold about once in every 4 GiB. Every entry's CRC-32 and size are checked.
 * Throws on a corrupt, encrypted or truncated archive; `opened` may throw to refuse one.
 */
class StreamedZip {
  private buffered: Uint8Array = new Uint8Array(0);
  private entry: OpenEntry | undefined;
  private pastEntries = false;

  /** `opened` is told each entry's name and declared size; it returns where its bytes go, or nothing to skip it. */
  constructor(private readonly opened: (name: string, declaredSize: number | undefined) => EntrySink | undefined) {}

  push(bytes: Uint8Array, final: boolean): void {
    const buffer = this.buffered.length === 0 ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length) : Buffer.concat([this.buffered, bytes]);
    let at = 0;
    while (!this.pastEntries) {
      const entry = this.entry;
      if (!entry) {
        if (buffer.length - at < 4) break;
        const signature = buffer.readUInt32LE(at);
        if (ENDS.includes(signature)) this.pastEntries = true;
        else if (signature !== LOCAL_HEADER) throw new Error(`no local header at the archive's byte ${at}`);
        else if (buffer.length - at < 30 || buffer.length - at < 30 + buffer.readUInt16LE(at + 26) + buffer.readUInt16LE(at + 28)) break;
        else at = this.open(buffer, at);
      } else if (entry.remaining !== undefined) {
        const take = Math.min(entry.remaining, buffer.length - at);
        entry.remaining -= take;
        this.pass(entry, buffer.subarray(at, (at += take)), entry.remaining === 0);
        if (entry.remaining > 0) break;
        this.close(entry, entry.expectedCrc, entry.expectedSize);
      } else {
        const end = this.descriptorAfter(entry, buffer, at);
        if (!end) {
          const upTo = Math.max(at, buffer.length - HELD_BACK);
          this.pass(entry, buffer.subarray(at, upTo), false);
          at = upTo;
          break;
        }
        this.pass(entry, buffer.subarray(at, end.dataEnd), true);
        this.close(entry, end.crc, end.size);
        at = end.next;
      }
    }
    this.buffered = this.pastEntries ? new Uint8Array(0) : buffer.subarray(at);
    if (final && !this.pastEntries) throw new Error(this.entry ? `the archive ends inside ${this.entry.name}` : 'the archive ends before its central directory');
  }

  /** Reads the local header at `at`; returns where the entry's data starts. */
  private open(buffer: Buffer, at: number): number {
    const flags = buffer.readUInt16LE(at + 6);
    const method = buffer.readUInt16LE(at + 8);
    const nameLength = buffer.readUInt16LE(at + 26);
    const extraEnd = at + 30 + nameLength + buffer.readUInt16LE(at + 28);
    const name = buffer.toString(flags & 0x800 ? 'utf8' : 'latin1', at + 30, at + 30 + nameLength);
    if (flags & 1) throw new CutoutError('invalid_request', `The archive's entry ${name} is encrypted; send an archive without a password.`);
    if (method !== 0 && method !== 8) throw new CutoutError('invalid_request', `The archive's entry ${name} is compressed with method ${method}; send one stored or deflated (what every zip tool makes by default).`);
    let compressed: number = buffer.readUInt32LE(at + 18);
    let size: number = buffer.readUInt32LE(at + 22);
    for (let field = at + 30 + nameLength; field + 4 <= extraEnd; field += 4 + buffer.readUInt16LE(field + 2)) {
      if (buffer.readUInt16LE(field) !== 1) continue;
      // The ZIP64 field holds the sizes whose 32-bit fields are full, the original size first.
      let value = field + 4;
      if (size === 0xffffffff) (size = Number(buffer.readBigUInt64LE(value))), (value += 8);
      if (compressed === 0xffffffff) compressed = Number(buffer.readBigUInt64LE(value));
    }
    const described = (flags & 8) !== 0;
    const sink = this.opened(name, described ? undefined : size);
    const entry: OpenEntry = { name, sink, inflate: undefined, remaining: described ? undefined : compressed, expectedCrc: buffer.readUInt32LE(at + 14), expectedSize: described ? undefined : size, read: 0, crc: 0, size: 0 };
    if (method === 8) entry.inflate = new Inflate((chunk) => this.inflated(entry, chunk));
    this.entry = entry;
    return extraEnd;
  }

  /** Passes compressed bytes on, through the inflater if the entry has one. */
  private pass(entry: OpenEntry, bytes: Uint8Array, final: boolean): void {
    entry.read += bytes.length;
    if (!entry.inflate) return this.inflated(entry, bytes);
    try {
      entry.inflate.push(bytes, final);
    } catch (error) {
      if (error instanceof CutoutError) throw error;
      throw new CutoutError('invalid_request', `The archive's entry ${entry.name} is corrupt.`, { cause: error });
    }
  }

  private inflated(entry: OpenEntry, chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    entry.crc = crc32(chunk, entry.crc);
    entry.size += chunk.length;
    entry.sink?.data(chunk);
  }

  private close(entry: OpenEntry, crc: number, size: number | undefined): void {
    if (entry.crc !== crc || (size !== undefined && entry.size !== size)) throw new CutoutError('invalid_request', `The archive's entry ${entry.name} is corrupt (its CRC-32 or size does not match its data).`);
    this.entry = undefined;
    entry.sink?.end();
  }

  /** The data descriptor that ends `entry` in `buffer` from `at` on, if the buffer holds it and the next header's signature. */
  private descriptorAfter(entry: OpenEntry, buffer: Buffer, at: number): { dataEnd: number; next: number; crc: number; size: number } | undefined {
    for (let from = at; ; ) {
      const next = Math.min(...NEXT_HEADERS.map((signature) => buffer.indexOf(signature, from)).map((found) => (found < 0 ? Infinity : found)));
      if (next === Infinity) return undefined;
      for (const { length, signed, wide } of DESCRIPTORS) {
        const start = next - length;
        if (start < at || (signed && buffer.readUInt32LE(start) !== DATA_DESCRIPTOR)) continue;
        const crcAt = start + (signed ? 4 : 0);
        const readSize = (offset: number) => (wide ? Number(buffer.readBigUInt64LE(offset)) : buffer.readUInt32LE(offset));
        if (readSize(crcAt + 4) === entry.read + (start - at)) return { dataEnd: start, next, crc: buffer.readUInt32LE(crcAt), size: readSize(crcAt + (wide ? 12 : 8)) };
      }
      from = next + 1;
    }
  }
}
