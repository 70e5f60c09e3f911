import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { CutoutApiError, CutoutClient, type OutputOptions } from '@cutout/client';
import { collectRemovalJobs, type RemovalJob } from './removal-jobs.js';
import { createRemovalProgress, type JobOutcome, type ProgressStreams } from './removal-progress.js';
import { UsageError } from './usage-error.js';

export const REMOVE_USAGE = `Usage: cutout remove <files, folders or URLs…> -o OUTDIR [options]

Sends each image to a Cutout server (over HTTP, with the TypeScript SDK) and writes each
result to OUTDIR: folders are walked for image files and keep their sub-folders; a URL is
fetched by the server. Inputs are never written over.

Server:
  --url URL              the server (default: $CUTOUT_URL, else http://127.0.0.1:8080)
  --token-id ID          a Token ID (default: $CUTOUT_TOKEN_ID; prefer the variable, which
                         other users of this machine cannot read in the process list)
Run:
  -o, --output OUTDIR    where the results go (created if missing)
  --concurrency N        images in flight at once (default 4)
  --skip-existing        leave out the images whose result is already in OUTDIR
Result (the API's output options):
  --format F             png (default), webp or jpg: the encoding and the file's ending;
                         auto: PNG when the result has transparency, else JPEG (.png or
                         .jpg as it came); zip: remove.bg's archive, written as it came
                         (NAME.zip holding color.jpg and alpha.png)
  --channels rgba|alpha  alpha: the mask alone
  --bg-color HEX         composite onto a colour (rgb, rrggbb, rrggbbaa)
  --bg-image-url URL     composite onto an image the server fetches
  --crop                 crop to the subject
  --crop-margin M        margin around the crop: pixels (30) or percent (10%)
  --max-width N, --max-height N   scale down to fit
  --roi "x1 y1 x2 y2"    region of interest, in pixels or percent
  --no-refine            the model's mask as it is, without edge refinement
  --quality best|fast    best: the photo and its mirror, fused; fast: one look
                         (default: the server's CUTOUT_QUALITY, normally best)
  --size S               at most preview (0.25 MP), medium (1.5 MP) or hd (4 MP); full: no cap
  --scale P              the subject at P (10%-100%) of the canvas, centred unless --position
  --position P           center, "x%" or "x% y%": where the subject stands on the canvas
  --shadow               a shadow under the subject, cast from its alpha
  --shadow-type T        drop (default), 3D or car
  --shadow-opacity N     the shadow's darkness, 0-100 (default 50)
  --model NAME           which of the server's models cuts (its CUTOUT_MODELS; default the first)

On a terminal it shows a progress bar; otherwise one line per image. Exit status 0 when
every image was written or skipped, 1 when any failed, 2 for a usage error.`;

const FORMATS = ['png', 'webp', 'jpg', 'jpeg', 'auto', 'zip'] as const;
const CHANNELS = ['rgba', 'alpha'] as const;
const QUALITIES = ['best', 'fast'] as const;
/** The endings a result may take for each format, the expected one first: `auto` lets the answer choose. */
const EXTENSIONS: Record<(typeof FORMATS)[number], readonly [string, ...string[]]> = {
  png: ['.png'],
  webp: ['.webp'],
  jpg: ['.jpg'],
  jpeg: ['.jpg'],
  auto: ['.png', '.jpg'],
  zip: ['.zip'],
};
/** The ending of an answer of each Content-Type. */
const EXTENSION_OF_TYPE: Readonly<Record<string, string>> = { 'image/png': '.png', 'image/webp': '.webp', 'image/jpeg': '.jpg', 'application/zip': '.zip' };

const FLAGS = {
  output: { type: 'string', short: 'o' },
  url: { type: 'string' },
  'token-id': { type: 'string' },
  concurrency: { type: 'string' },
  'skip-existing': { type: 'boolean' },
  format: { type: 'string' },
  channels: { type: 'string' },
  'bg-color': { type: 'string' },
  'bg-image-url': { type: 'string' },
  crop: { type: 'boolean' },
  'crop-margin': { type: 'string' },
  'max-width': { type: 'string' },
  'max-height': { type: 'string' },
  roi: { type: 'string' },
  refine: { type: 'boolean' },
  'no-refine': { type: 'boolean' },
  quality: { type: 'string' },
  size: { type: 'string' },
  scale: { type: 'string' },
  position: { type: 'string' },
  shadow: { type: 'boolean' },
  'shadow-type': { type: 'string' },
  'shadow-opacity': { type: 'string' },
  model: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** What the command line asked for, checked. */
interface RemoveRun {
  inputs: string[];
  outputDir: string;
  baseUrl: string;
  tokenId: string;
  concurrency: number;
  skipExisting: boolean;
  options: OutputOptions;
  extensions: readonly [string, ...string[]];
}

/**
 * `cutout remove`: removes the backgrounds of many images through a Cutout server. Returns
 * the exit status: 0 when nothing failed, 1 when some image failed, 130 when interrupted.
 *
 * @example await removeCommand(['photos', '-o', 'cutouts', '--format', 'webp'], process.env, process)
 */
export async function removeCommand(args: string[], env: NodeJS.ProcessEnv, streams: ProgressStreams): Promise<number> {
  const run = parseRemoveArgs(args, env);
  if (!run) {
    streams.stdout.write(`${REMOVE_USAGE}\n`);
    return 0;
  }
  const jobs = await collectRemovalJobs(run.inputs, run.outputDir, run.extensions);
  if (jobs.length === 0) throw new UsageError(`no image files in ${run.inputs.join(', ')}`);
  const skipped: RemovalJob[] = [];
  const toSend: RemovalJob[] = [];
  for (const job of jobs) {
    const existing = run.skipExisting ? await firstExisting(job.candidates) : undefined;
    if (existing) skipped.push({ ...job, output: existing });
    else toSend.push(job);
  }

  const progress = createRemovalProgress(streams);
  const client = new CutoutClient({ baseUrl: run.baseUrl, tokenId: run.tokenId, onRetry: () => progress.retried() });
  const stopping = new AbortController();
  const interrupt = () => stopping.abort();
  process.once('SIGINT', interrupt);
  let next = 0;
  let finished = 0;
  let failed = 0;
  const worker = async () => {
    while (next < toSend.length && !stopping.signal.aborted) {
      const job = toSend[next++];
      const outcome = await removeOne(client, job, run.options, stopping.signal);
      if (!outcome) return; // interrupted
      finished++;
      if (outcome.kind === 'failed') failed++;
      progress.finished(outcome);
    }
  };
  progress.start(toSend.length, skipped);
  try {
    await Promise.all(Array.from({ length: Math.min(run.concurrency, toSend.length) }, worker));
  } finally {
    process.off('SIGINT', interrupt);
    progress.stop(toSend.length - finished);
  }
  if (stopping.signal.aborted) return 130;
  return failed ? 1 : 0;
}

/** Sends one image and writes its result; undefined when the run was interrupted meanwhile. */
async function removeOne(client: CutoutClient, job: RemovalJob, options: OutputOptions, signal: AbortSignal): Promise<JobOutcome | undefined> {
  const started = performance.now();
  try {
    const input = 'url' in job.source ? { url: job.source.url } : await readFile(job.source.file);
    const result = await client.removeBackground(input, { ...options, signal });
    // With format auto the answer's type picks the ending among the job's candidates.
    const output = job.candidates.length > 1 ? job.candidates.find((path) => path.endsWith(EXTENSION_OF_TYPE[result.contentType] ?? '\0')) : job.output;
    if (!output) return { kind: 'failed', job, code: 'unexpected_response', status: 200, detail: `The server answered ${result.contentType}, which format ${options.format} does not send.` };
    await writeAtomically(output, result.bytes);
    return { kind: 'written', job: { ...job, output }, width: result.width, height: result.height, ms: performance.now() - started };
  } catch (error) {
    if (signal.aborted) return undefined;
    if (error instanceof CutoutApiError) return { kind: 'failed', job, code: error.code, status: error.status, detail: error.detail };
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    return { kind: 'failed', job, code, status: 0, detail: error instanceof Error ? error.message : String(error) };
  }
}

/** Writes beside the target and renames, so that an interrupted run never leaves half a file that --skip-existing would keep. */
async function writeAtomically(path: string, bytes: Uint8Array): Promise<void> {
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

/** The first of `paths` that exists, if any. */
async function firstExisting(paths: readonly string[]): Promise<string | undefined> {
  for (const path of paths) if (await stat(path).then(() => true, () => false)) return path;
  return undefined;
}

/** The command line, checked; undefined for --help. */
function parseRemoveArgs(args: string[], env: NodeJS.ProcessEnv): RemoveRun | undefined {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, strict: true, options: FLAGS });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  if (values.help) return undefined;
  if (positionals.length === 0) throw new UsageError('remove needs at least one file, folder or URL');
  if (!values.output) throw new UsageError('remove needs an output folder: -o OUTDIR');
  const tokenId = values['token-id'] ?? env.CUTOUT_TOKEN_ID;
  if (!tokenId) throw new UsageError('remove needs a Token ID: set CUTOUT_TOKEN_ID (or pass --token-id); `cutout tokens create` makes one');
  const format = oneOf('--format', values.format, FORMATS);
  if (values.refine && values['no-refine']) throw new UsageError('--refine and --no-refine contradict each other');
  const options: OutputOptions = {
    format,
    channels: oneOf('--channels', values.channels, CHANNELS),
    bg_color: values['bg-color'],
    bg_image_url: values['bg-image-url'],
    crop: values.crop,
    crop_margin: values['crop-margin'],
    max_width: positiveInteger('--max-width', values['max-width']),
    max_height: positiveInteger('--max-height', values['max-height']),
    roi: values.roi,
    refine: values['no-refine'] ? false : values.refine,
    quality: oneOf('--quality', values.quality, QUALITIES),
    // Checked by the server, which names a bad value in its 400.
    size: values.size as OutputOptions['size'],
    scale: values.scale,
    position: values.position,
    add_shadow: values.shadow,
    shadow_type: values['shadow-type'] as OutputOptions['shadow_type'],
    shadow_opacity: values['shadow-opacity'] === undefined ? undefined : Number(values['shadow-opacity']),
    model: values.model,
  };
  return {
    inputs: positionals,
    outputDir: values.output,
    baseUrl: values.url ?? env.CUTOUT_URL ?? 'http://127.0.0.1:8080',
    tokenId,
    concurrency: positiveInteger('--concurrency', values.concurrency) ?? 4,
    skipExisting: values['skip-existing'] ?? false,
    options,
    extensions: EXTENSIONS[format ?? 'png'],
  };
}

function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  const lower = value.toLowerCase();
  if (!(allowed as readonly string[]).includes(lower)) throw new UsageError(`${flag} takes ${allowed.join(', ')}, not ${JSON.stringify(value)}`);
  return lower as T;
}

function positiveInteger(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d{0,5}$/.test(value)) throw new UsageError(`${flag} takes a positive whole number, not ${JSON.stringify(value)}`);
  return Number(value);
}
