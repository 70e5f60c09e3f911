import { createReadStream } from 'node:fs';
import type { PassThrough, Readable } from 'node:stream';
import { ZipFile } from 'yazl';

/** One file of the archive: its name inside, and where its bytes are on disk. */
export interface ZipEntry {
  name: string;
  path: string;
}

/** How the archive is written; the default is what every download gets. */
export interface ResultsZipOptions {
  /**
   * ZIP64 records for every entry and the archive's end even when nothing needs them (they
   * are written anyway for what passes 4 GiB or 65,535 entries), so that a small archive
   * can show readers the format a large one has.
   */
  forceZip64?: boolean;
}

/**
 * A zip of `entries`, made as it is read: each file is read from disk only when the reader
 * has taken what came before (yazl pipes it, with back-pressure), and stored as it is (the
 * results are PNG, WebP or JPEG already), so memory holds a chunk and each entry's central
 * directory record, not the archive, whatever the job's size. Sizes and offsets past 4 GiB
 * are written as ZIP64. Names repeated are made unique with `-2`, `-3`. A file that cannot be
 * read, or `entries` failing, destroys the stream with that error; a reader that leaves
 * stops the reading of the file in progress.
 *
 * @example reply.type('application/zip').send(resultsZip(entries))
 */
export function resultsZip(entries: AsyncIterable<ZipEntry>, options: ResultsZipOptions = {}): Readable {
  const zip = new ZipFile();
  // yazl's declared type is the bare interface; its outputStream is a PassThrough.
  const output = zip.outputStream as PassThrough;
  const forceZip64Format = options.forceZip64 ?? false;
  let reading: Readable | undefined;
  const fail = (error: Error) => output.destroy(error);
  zip.on('error', fail);
  output.on('close', () => reading?.destroy());

  const addEntries = async () => {
    const used = new Set<string>();
    // Each entry is added as soon as it is listed (yazl keeps every entry for the central
    // directory anyway); its file is opened only when yazl reaches it.
    for await (const entry of entries) {
      if (output.destroyed) return;
      zip.addReadStreamLazy(uniqueName(entry.name, used), { compress: false, forceZip64Format }, (opened) => {
        reading = createReadStream(entry.path).on('error', fail);
        opened(null, reading);
      });
    }
    if (!output.destroyed) zip.end({ forceZip64Format, comment: '' });
  };
  addEntries().catch(fail);
  return output;
}

function uniqueName(name: string, used: Set<string>): string {
  const dot = name.lastIndexOf('.');
  const [stem, extension] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
  let unique = name;
  for (let n = 2; used.has(unique); n++) unique = `${stem}-${n}${extension}`;
  used.add(unique);
  return unique;
}
