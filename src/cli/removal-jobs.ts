import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, extname, join, relative, resolve, sep } from 'node:path';
import { UsageError } from './usage-error.js';

/** The file name endings a folder walk takes for images; a file named on the command line is sent whatever its name. */
export const IMAGE_EXTENSIONS = new Set(['.jpg', '.jpeg', '.png', '.webp', '.gif', '.tif', '.tiff', '.avif', '.heic', '.heif']);

/** One image to send: a local file or a URL the server fetches, and where its result goes. */
export interface RemovalJob {
  /** As the user would recognise it: the path as typed or found, or the URL. */
  label: string;
  source: { file: string } | { url: string };
  /** Absolute path of the result. */
  output: string;
  /**
   * Every path the result may take, `output` first: more than one when the answer decides
   * the format (`auto`: `.png` or `.jpg`), all of them checked against the inputs and by
   * `--skip-existing`.
   */
  candidates: string[];
}

interface Found {
  label: string;
  source: RemovalJob['source'];
  /** The result's path under the output folder, without extension. */
  stem: string;
  /** The input's own extension without the dot ('' for none), to tell apart two inputs with one stem. */
  kind: string;
}

/**
 * Turns the command line's files, folders and URLs into jobs, in a stable order. Folders are
 * walked for image files (hidden entries, symbolic links to folders and the output folder
 * itself are left out) and keep their sub-folders under `outputDir`. Two inputs that would
 * share a result name get their own extension in it (`shoe-jpg.png`, `shoe-png.png`).
 * `extensions` are the endings a result may take, the expected one first. Refuses, before
 * anything is sent, a run that would write over one of its inputs.
 *
 * @example await collectRemovalJobs(['photos', 'https://example.com/a.jpg'], 'out', ['.png'])
 */
export async function collectRemovalJobs(inputs: string[], outputDir: string, extensions: readonly [string, ...string[]]): Promise<RemovalJob[]> {
  const outputRoot = resolve(outputDir);
  const found: Found[] = [];
  for (const input of inputs) {
    if (/^https?:\/\//i.test(input)) {
      found.push({ label: input, source: { url: input }, ...namesOfUrl(input) });
      continue;
    }
    const info = await stat(input).catch(() => undefined);
    if (!info) throw new UsageError(`${input}: no such file or folder`);
    if (info.isDirectory()) {
      for (const file of await walkImages(resolve(input), outputRoot)) {
        const inside = relative(resolve(input), file);
        found.push({ label: join(input, inside), source: { file }, stem: stripExtension(inside), kind: kindOf(file) });
      }
    } else {
      found.push({ label: input, source: { file: resolve(input) }, stem: stripExtension(basename(input)), kind: kindOf(input) });
    }
  }
  const jobs = nameOutputs(found, outputRoot, extensions);
  await refuseOverwritingInputs(jobs);
  return jobs;
}

/**
 * Image files under `folder`, sorted, skipping hidden entries and `exclude` (the output
 * folder) when it lies below: a second run must not take the first one's results for photos.
 */
async function walkImages(folder: string, exclude: string): Promise<string[]> {
  const files: string[] = [];
  const visit = async (dir: string): Promise<void> => {
    if (dir === exclude && dir !== folder) return;
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const path = join(dir, entry.name);
      // A symbolic link to a folder could lead back up the tree; one to a file is taken.
      if (entry.isDirectory()) await visit(path);
      else if ((entry.isFile() || (entry.isSymbolicLink() && (await stat(path).catch(() => undefined))?.isFile())) && IMAGE_EXTENSIONS.has(extname(entry.name).toLowerCase())) files.push(path);
    }
  };
  await visit(folder);
  return files;
}

function namesOfUrl(url: string): { stem: string; kind: string } {
  let last = '';
  try {
    last = decodeURIComponent(new URL(url).pathname.split('/').filter(Boolean).at(-1) ?? '');
  } catch {
    last = '';
  }
  // Only what is safe in a file name on every system.
  const safe = last.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^\.+/, '');
  return { stem: stripExtension(safe) || 'image', kind: kindOf(safe) };
}

const stripExtension = (name: string) => name.slice(0, name.length - extname(name).length);
const kindOf = (name: string) => extname(name).slice(1).toLowerCase();

/** Gives each input its result path; clashing names take the input's extension, then a number. */
function nameOutputs(found: Found[], outputRoot: string, extensions: readonly [string, ...string[]]): RemovalJob[] {
  const count = (names: string[]) => names.reduce((map, name) => map.set(name, (map.get(name) ?? 0) + 1), new Map<string, number>());
  const plain = found.map((item) => item.stem);
  const plainCounts = count(plain);
  const distinct = found.map((item, i) => (plainCounts.get(plain[i])! > 1 && item.kind ? `${item.stem}-${item.kind}` : item.stem));
  const distinctCounts = count(distinct);
  const used = new Map<string, number>();
  return found.map((item, i) => {
    let name = distinct[i];
    if (distinctCounts.get(name)! > 1) {
      const n = (used.get(name) ?? 0) + 1;
      used.set(name, n);
      if (n > 1) name = `${name}-${n}`;
    }
    const candidates = extensions.map((extension) => join(outputRoot, `${name}${extension}`));
    return { label: item.label, source: item.source, output: candidates[0], candidates };
  });
}

/** A result path that is also an input (`-o` on the input folder, with PNGs in it) stops the run before it starts. */
async function refuseOverwritingInputs(jobs: RemovalJob[]): Promise<void> {
  const inputs = new Map<string, string>();
  for (const job of jobs) {
    if ('file' in job.source) inputs.set(await realpath(job.source.file), job.label);
  }
  for (const job of jobs) {
    for (const output of job.candidates) {
      const target = await realpath(output).catch(() => output);
      const input = inputs.get(target);
      if (input !== undefined) throw new UsageError(`the result of ${job.label} would be written over the input ${input} (${target.split(sep).slice(-2).join(sep)}); choose another output folder with -o`);
    }
  }
}
