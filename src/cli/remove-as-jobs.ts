import { openAsBlob } from 'node:fs';
import { CutoutApiError, type CutoutClient, type Job, type OutputOptions } from '@cutout/client';
import type { RemovalJob } from './removal-jobs.js';
import type { RemovalProgress } from './removal-progress.js';
import { outputFor, writeAtomically } from './result-output.js';

/** How often the job is asked whether it is done. */
const POLL_MS = 1000;

/**
 * `cutout remove --job`: sends the URLs as one job and the files as one upload (each named
 * after its place in `toSend`, so that every result finds its way back), waits until the
 * server has cut them with its idle time, then downloads each result to its output. Returns
 * how many were finished and how many of those failed; an interrupt cancels the jobs.
 *
 * @example const { finished, failed } = await removeAsJobs(client, toSend, options, progress, signal)
 */
export async function removeAsJobs(client: CutoutClient, toSend: readonly RemovalJob[], options: OutputOptions, progress: RemovalProgress, signal: AbortSignal): Promise<{ finished: number; failed: number }> {
  const started = performance.now();
  const urls = toSend.flatMap((job, index) => ('url' in job.source ? [{ url: job.source.url, id: String(index) }] : []));
  const files = toSend.flatMap((job, index) => ('file' in job.source ? [{ file: job.source.file, name: `${index}.image` }] : []));
  const made: Job[] = [];
  if (urls.length > 0) made.push(await client.jobs.create(urls, { ...options, signal }));
  if (files.length > 0) made.push(await client.jobs.upload(await Promise.all(files.map(async ({ file, name }) => ({ name, data: await openAsBlob(file) }))), { ...options, signal }));

  let finished = 0;
  let failed = 0;
  try {
    for (const job of made) {
      await client.jobs.wait(job.id, { signal, intervalMs: POLL_MS });
      for (let page = 1, more = true; more; page++) {
        const items = await client.jobs.get(job.id, { signal, page, perPage: 1000 });
        more = items.more;
        for (const item of items.items) {
          const removal = toSend[Number(item.id)];
          if (!removal) continue;
          finished++;
          if (item.state !== 'succeeded') {
            failed++;
            const problem = item.problem ?? { code: item.state, status: 0, detail: `The image was ${item.state}.` };
            progress.finished({ kind: 'failed', job: removal, code: problem.code, status: problem.status, detail: problem.detail });
            continue;
          }
          try {
            const result = await client.jobs.item(job.id, item.index, { signal });
            const output = outputFor(removal, result.contentType);
            if (!output) throw new CutoutApiError({ status: 200, code: 'unexpected_response', detail: `The server answered ${result.contentType}, which format ${options.format} does not send.` });
            await writeAtomically(output, result.bytes);
            progress.finished({ kind: 'written', job: { ...removal, output }, ms: performance.now() - started });
          } catch (error) {
            if (signal.aborted) throw error;
            failed++;
            const known = error instanceof CutoutApiError ? error : undefined;
            progress.finished({ kind: 'failed', job: removal, code: known?.code ?? 'error', status: known?.status ?? 0, detail: error instanceof Error ? error.message : String(error) });
          }
        }
      }
    }
  } catch (error) {
    if (!signal.aborted) throw error;
    // Interrupted: the server need not go on cutting what nobody will download.
    await Promise.allSettled(made.map((job) => client.jobs.cancel(job.id, { retry: false })));
  }
  return { finished, failed };
}
