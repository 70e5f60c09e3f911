import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { Zip, ZipPassThrough } from 'fflate';

/** One file of the archive: its name inside, and where its bytes are on disk. */
export interface ZipEntry {
  name: string;
  path: string;
}

/**
 * A zip of `entries`, made as it is read: each file is read from disk in chunks and passed
 * through uncompressed (the results are PNG, WebP or JPEG already), so memory holds a chunk,
 * not the archive, whatever the job's size. Names repeated are made unique with `-2`, `-3`.
 *
 * @example reply.type('application/zip').send(resultsZip(entries))
 */
export function resultsZip(entries: AsyncIterable<ZipEntry>): Readable {
  return Readable.from(zipChunks(entries), { objectMode: false });
}

async function* zipChunks(entries: AsyncIterable<ZipEntry>): AsyncGenerator<Uint8Array> {
  const ready: Uint8Array[] = [];
  let failure: Error | null = null;
  const zip = new Zip((error, chunk) => {
    if (error) failure = error;
    else ready.push(chunk);
  });
  const drain = function* () {
    if (failure) throw failure;
    yield* ready.splice(0);
  };
  const used = new Set<string>();
  for await (const entry of entries) {
    const file = new ZipPassThrough(uniqueName(entry.name, used));
    zip.add(file);
    for await (const chunk of createReadStream(entry.path)) {
      file.push(chunk as Buffer);
      yield* drain();
    }
    file.push(new Uint8Array(0), true);
    yield* drain();
  }
  zip.end();
  yield* drain();
}

function uniqueName(name: string, used: Set<string>): string {
  let unique = name;
  const dot = name.lastIndexOf('.');
  for (let n = 2; used.has(unique); n++) unique = `${name.slice(0, dot)}-${n}${name.slice(dot)}`;
  used.add(unique);
  return unique;
}
