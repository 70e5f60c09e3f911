import { parseArgs } from 'node:util';
import { CutoutApiError, CutoutClient, type Job } from '@cutout/client';
import { progressText } from '../jobs/progress-text.js';
import { printTable } from './print-table.js';
import { serverOf, SERVER_FLAGS } from './server-flags.js';
import { UsageError } from './usage-error.js';

export const JOBS_USAGE = `  cutout jobs list [--limit N]           the account's recent jobs, newest first (over HTTP, like remove:
                                          --url, --token-id or $CUTOUT_URL, $CUTOUT_TOKEN_ID)
  cutout jobs show JOB_ID                 a job's status, counts and its failed images
  cutout jobs cancel JOB_ID               cancels it; the results finished before stay downloadable`;

/** One job on a line: id, status, images done of all, created. */
const row = (job: Job): string[] => [job.id, job.status, `${job.counts.succeeded + job.counts.failed}/${job.counts.total}`, String(job.counts.failed), job.createdAt];
const HEADER = ['ID', 'STATUS', 'DONE', 'FAILED', 'CREATED'];

/**
 * `cutout jobs list|show|cancel`: the jobs of the account of a Token ID, through a server's
 * API with the SDK, as `cutout remove` talks to it. Returns the exit status: 1, with the
 * server's problem on stderr, when the server refused (an unknown job: 404 `not_found`).
 */
export async function jobsCommand(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  try {
    return await jobs(args, env);
  } catch (error) {
    if (!(error instanceof CutoutApiError)) throw error;
    console.error(`cutout: ${error.message}`);
    return 1;
  }
}

async function jobs(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, strict: true, options: { ...SERVER_FLAGS, limit: { type: 'string' } } });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const [sub, id, ...extra] = parsed.positionals;
  if (extra.length > 0) throw new UsageError(`jobs ${sub}: unexpected ${extra.join(' ')}`);
  const client = new CutoutClient(serverOf(`jobs ${sub ?? ''}`.trim(), parsed.values, env));
  if (sub === 'list') {
    const limit = parsed.values.limit === undefined ? undefined : Number(parsed.values.limit);
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 100)) throw new UsageError('--limit is a whole number from 1 to 100');
    const jobs = await client.jobs.list({ limit });
    if (jobs.length === 0) console.log('No jobs yet: cutout remove DIR -o OUT --job makes one');
    else printTable([HEADER, ...jobs.map(row)]);
    return 0;
  }
  if (sub !== 'show' && sub !== 'cancel') throw new UsageError('jobs takes list, show JOB_ID or cancel JOB_ID');
  if (!id) throw new UsageError(`jobs ${sub} needs a job id (cutout jobs list shows them)`);
  if (sub === 'cancel') {
    printTable([HEADER, row(await client.jobs.cancel(id))]);
    return 0;
  }
  const first = await client.jobs.get(id, { perPage: 1000 });
  printTable([HEADER, row(first)]);
  if (first.progress) console.log(`\n${progressText(first.progress)}`);
  const failed = [];
  for (let page = first, at = 1; ; page = await client.jobs.get(id, { page: ++at, perPage: 1000 })) {
    failed.push(...page.items.filter((item) => item.state === 'failed'));
    if (!page.more) break;
  }
  if (failed.length > 0) {
    console.log('\nFailed images:');
    printTable([['INDEX', 'ID', 'CODE', 'DETAIL'], ...failed.map((item) => [String(item.index), item.id ?? '-', item.problem?.code ?? '-', item.problem?.detail ?? ''])]);
  }
  return 0;
}
