import { constants } from 'node:fs';
import { copyFile, mkdir, readdir, stat } from 'node:fs/promises';
import { dirname, join, normalize, relative as relativeTo, sep } from 'node:path';

/**
 * A job file's path as the database gives it, relative to the data directory, checked to stay
 * under `jobs/`: a restored or damaged row must not make a backup read, or a restore write,
 * anywhere else.
 */
function checkedJobPath(relative: string): string {
  const path = normalize(relative);
  if (!path.startsWith(`jobs${sep}`) || path.split(sep).includes('..')) throw new Error(`a job file outside jobs/: ${JSON.stringify(relative)}`);
  return path;
}

/**
 * Copies `relative` from one root to the other (a copy-on-write clone where the file system
 * offers one); returns its size, or undefined when the source is gone.
 */
export async function copyJobFile(fromRoot: string, toRoot: string, relative: string): Promise<number | undefined> {
  const path = checkedJobPath(relative);
  const target = join(toRoot, path);
  await mkdir(dirname(target), { recursive: true });
  try {
    await copyFile(join(fromRoot, path), target, constants.COPYFILE_FICLONE);
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return undefined;
    throw error;
  }
  return (await stat(target)).size;
}

/**
 * Every file under `<root>/jobs`, relative to `root`, leaving out the `.partial` files a result
 * is written to before it is renamed into place.
 */
export async function listJobFiles(root: string, only?: (relative: string) => boolean): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(join(root, 'jobs'), { recursive: true, withFileTypes: true });
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return [];
    throw error;
  }
  return entries
    .filter((entry) => entry.isFile() && !entry.name.endsWith('.partial'))
    .map((entry) => relativeTo(root, join(entry.parentPath, entry.name)))
    .filter((relative) => only?.(relative) ?? true)
    .sort();
}
