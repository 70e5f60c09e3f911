import { readFile, stat } from 'node:fs/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CutoutApiError, CutoutClient, type OutputOptions } from '@cutout/client';
import { collectRemovalJobs, type RemovalJob } from './removal-jobs.js';
import { createRemovalProgress, type JobOutcome, type ProgressStreams } from './removal-progress.js';
import { OPTIONS, optionsOf } from '../options/option-table.js';
import type { RequestedFormat } from '../pipeline/answer-spec.js';
import { removeAsJobs } from './remove-as-jobs.js';
import { outputFor, writeAtomically } from './result-output.js';
import { serverOf, SERVER_FLAGS } from './server-flags.js';
import { UsageError } from './usage-error.js';

/** One line or more per option flag: the flag, then the first sentence of its description. */
function optionHelp(): string {
  return optionsOf('native')
    .map((name) => {
      const { kind, flag = name.replaceAll('_', '-'), description } = OPTIONS[name];
      const head = `  --${flag}${kind.flag === 'string' ? ' V' : ''}`.padEnd(25);
      const sentence = description.split(/(?<=\.)\s/)[0];
      const words = sentence.split(' ');
      const lines = [head];
      for (const word of words) {
        if (lines[lines.length - 1].length + word.length + 1 > 92) lines.push(' '.repeat(25));
        lines[lines.length - 1] += lines[lines.length - 1].endsWith(' ') ? word : ` ${word}`;
      }
      return lines.join('\n');
    })
    .join('\n');
}

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
  --job                  send them all as one job (URLs) and one upload (files), which the
                         server cuts with its idle time, then download the results
Result (the API's output options, docs/api.md; the server reads them):
${optionHelp()}
  --no-refine            the model's mask as it is, without edge refinement
  --format also names the file: .png, .webp or .jpg; auto writes .png or .jpg as it
  came, zip writes remove.bg's archive (NAME.zip holding color.jpg and alpha.png).

On a terminal it shows a progress bar; otherwise one line per image. Exit status 0 when
every image was written or skipped, 1 when any failed, 2 for a usage error.`;

/** The endings a result may take for each format, the expected one first: `auto` lets the answer choose. */
const EXTENSIONS: Record<RequestedFormat, readonly [string, ...string[]]> = {
  png: ['.png'],
  webp: ['.webp'],
  jpeg: ['.jpg'],
  auto: ['.png', '.jpg'],
  zip: ['.zip'],
};

/** The run's own flags. */
const RUN_FLAGS = {
  output: { type: 'string', short: 'o' },
  ...SERVER_FLAGS,
  concurrency: { type: 'string' },
  'skip-existing': { type: 'boolean' },
  job: { type: 'boolean' },
  'no-refine': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The native options of the option table, each as its flag (its name in kebab-case, or the table's `flag`). */
const OPTION_FLAGS = optionsOf('native').map((name) => ({ name, flag: OPTIONS[name].flag ?? name.replaceAll('_', '-'), type: OPTIONS[name].kind.flag }));

const FLAGS: ParseArgsConfig['options'] = { ...RUN_FLAGS, ...Object.fromEntries(OPTION_FLAGS.map(({ flag, type }) => [flag, { type }])) };

/** What the command line asked for, checked. */
interface RemoveRun {
  inputs: string[];
  outputDir: string;
  baseUrl: string;
  tokenId: string;
  concurrency: number;
  skipExisting: boolean;
  /** Send the images as jobs rather than one request each. */
  job: boolean;
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
    if (run.job) ({ finished, failed } = await removeAsJobs(client, toSend, run.options, progress, stopping.signal));
    else await Promise.all(Array.from({ length: Math.min(run.concurrency, toSend.length) }, worker));
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
    const output = outputFor(job, result.contentType);
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
  const { positionals } = parsed;
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const text = (flag: string) => (typeof values[flag] === 'string' ? (values[flag] as string) : undefined);
  if (values.help) return undefined;
  if (positionals.length === 0) throw new UsageError('remove needs at least one file, folder or URL');
  const outputDir = text('output');
  if (!outputDir) throw new UsageError('remove needs an output folder: -o OUTDIR');
  const { baseUrl, tokenId } = serverOf('remove', { url: text('url'), 'token-id': text('token-id') }, env);
  if (values.refine && values['no-refine']) throw new UsageError('--refine and --no-refine contradict each other');
  // Each value is checked here by the server's own reader, and sent as it was written.
  const options: Record<string, string | boolean> = {};
  for (const { name, flag } of OPTION_FLAGS) {
    const value = values[flag];
    if (typeof value !== 'string' && typeof value !== 'boolean') continue;
    try {
      OPTIONS[name].kind.read(`--${flag}`, value);
    } catch (error) {
      throw new UsageError(error instanceof Error ? error.message : String(error));
    }
    options[name] = value;
  }
  if (values['no-refine']) options.refine = false;
  const format = typeof options.format === 'string' ? OPTIONS.format.kind.read('--format', options.format) : undefined;
  return {
    inputs: positionals,
    outputDir,
    baseUrl,
    tokenId,
    concurrency: positiveInteger('--concurrency', text('concurrency')) ?? 4,
    skipExisting: values['skip-existing'] === true,
    job: values.job === true,
    // The flags' values passed the table's readers, which are what the server reads them with.
    options: options as OutputOptions,
    extensions: EXTENSIONS[format ?? 'png'],
  };
}

function positiveInteger(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d{0,5}$/.test(value)) throw new UsageError(`${flag} takes a positive whole number, not ${JSON.stringify(value)}`);
  return Number(value);
}
