import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { RemovalJob } from './removal-jobs.js';

/** The ending of an answer of each Content-Type. */
const EXTENSION_OF_TYPE: Readonly<Record<string, string>> = { 'image/png': '.png', 'image/webp': '.webp', 'image/jpeg': '.jpg', 'application/zip': '.zip' };

/**
 * Where a result of `contentType` goes: the job's output, or with format auto the one of its
 * candidates whose ending the answer's type picks; undefined when none fits.
 */
export function outputFor(job: RemovalJob, contentType: string): string | undefined {
  return job.candidates.length > 1 ? job.candidates.find((path) => path.endsWith(EXTENSION_OF_TYPE[contentType] ?? '\0')) : job.output;
}

/** Writes beside the target and renames, so that an interrupted run never leaves half a file that --skip-existing would keep. */
export async function writeAtomically(path: string, bytes: Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const partial = `${path}.${process.pid}.partial`;
  try {
    await writeFile(partial, bytes);
    await rename(partial, path);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}
