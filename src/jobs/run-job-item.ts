import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import { CutoutError, type ErrorCode } from '../errors.js';
import { toCutoutError } from '../http/error-handler.js';
import { readOptions } from '../options/read-options.js';
import { ENCODED_TYPES } from '../pipeline/answer-spec.js';
import type { RemovalService } from '../removal/removal-service.js';
import type { ClaimedJobItem } from '../store/job-records.js';
import type { Store } from '../store/store.js';
import { resultPath } from './result-files.js';

/** What working on one item needs of the process, whichever runner claimed it. */
export interface ItemRunParts {
  config: Pick<Config, 'dataDir' | 'requestTimeoutMs'>;
  store: Store;
  removals: Pick<RemovalService, 'fetch' | 'remove'>;
  log: FastifyBaseLogger;
  /** Told of every item that ended (the metrics count them). */
  onItemEnd?: (state: 'succeeded' | 'failed', code?: string) => void;
  now?: () => Date;
}

/**
 * How a run ended: `ended` (succeeded or failed, counted by this claim, or refused because
 * the claim was no longer the item's), `returned` (the server was in the way: the item is
 * handed back, `queued` again, this start not counted), `stopped` (this process is stopping:
 * handed back the same way for another runner, or left `running` when the store could not
 * be told, for the next start to take) or `cancelled` (the job was cancelled meanwhile).
 */
export type ItemRunEnd = 'ended' | 'returned' | 'stopped' | 'cancelled';

/** The reasons a runner aborts its own items with. */
export class ItemStop extends Error {
  constructor(readonly why: 'stopping' | 'cancelled') {
    super(`job item ${why}`);
    this.name = 'ItemStop';
  }
}

/**
 * Errors that say the server, not the image, was in the way: the item is handed back, and the
 * hand-back does not count as one of its starts (`MAX_ITEM_STARTS` counts only starts whose
 * server died); the runner waits a little before it takes an item again.
 */
const SERVER_IN_THE_WAY: ReadonlySet<ErrorCode> = new Set(['queue_full', 'not_ready', 'store_unavailable']);

/**
 * Works on one claimed item as a synchronous URL request would go (fetch with the same
 * guards, the same pipeline, the same problem code when it fails), writes its result under
 * the data directory, and ends it in the store with `finishJobItem`, which counts it in the
 * token's usage only for the claim that still holds the item. The embedded runner and the
 * BullMQ worker both run their items through here.
 *
 * `signal` aborted with an {@link ItemStop} stops the item: `stopping` puts it back in the
 * queue, `cancelled` leaves it as the cancellation wrote it.
 *
 * @example const end = await runJobItem(parts, claim, controller.signal) // 'ended'
 */
export async function runJobItem(parts: ItemRunParts, claim: ClaimedJobItem, signal: AbortSignal): Promise<ItemRunEnd> {
  const { config, store, removals, log } = parts;
  const now = parts.now ?? (() => new Date());
  const deadlineMs = config.requestTimeoutMs;
  // Due as long after its start as a request after its arrival: the removal waits for memory only while it could still finish by then.
  const due = performance.now() + deadlineMs;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new CutoutError('deadline_exceeded', `The image did not finish within ${deadlineMs} ms.`)), deadlineMs);
  const both = AbortSignal.any([signal, deadline.signal]);
  try {
    const options = readOptions(claim.options, 'native');
    const photo = claim.inputPath ? await readFile(join(config.dataDir, claim.inputPath)) : await removals.fetch(claim.imageUrl ?? '', 'image_url', both);
    if (photo.length === 0) throw new CutoutError('invalid_request', 'The image is empty (0 bytes).');
    const result = await removals.remove(photo, both, { options, deadline: due, forJob: true });
    const path = resultPath(claim.jobId, claim.index, result.format);
    // A redo (after a restart, or on another replica) writes the same path: it replaces the result, never adds one.
    await writeAtomically(join(config.dataDir, path), result.bytes);
    const megapixels = (result.input.width * result.input.height) / 1e6;
    const ended = await store.finishJobItem(claim, { state: 'succeeded', resultPath: path, contentType: ENCODED_TYPES[result.format], megapixels }, now().toISOString());
    if (ended) parts.onItemEnd?.('succeeded');
    // An uploaded image is no longer needed once its result is kept.
    if (ended && claim.inputPath) await rm(join(config.dataDir, claim.inputPath), { force: true });
    return 'ended';
  } catch (error) {
    try {
      return await endFailed(parts, claim, signal.aborted ? signal.reason : error, now);
    } catch (storeError) {
      // The item stays `running` in the store; the next start (or another replica) takes it again.
      log.warn({ err: storeError, job: claim.jobId, item: claim.index }, 'a job item\'s end could not be recorded');
      return 'stopped';
    }
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Ends an item whose run threw: puts it back when the process is stopping or the server was
 * in the way, otherwise records the problem the URL endpoint would have answered.
 */
async function endFailed(parts: ItemRunParts, claim: ClaimedJobItem, error: unknown, now: () => Date): Promise<ItemRunEnd> {
  const { store, log } = parts;
  if (error instanceof ItemStop) {
    if (error.why === 'cancelled') return 'cancelled';
    await store.returnJobItem(claim);
    return 'stopped';
  }
  const problem = toCutoutError(error);
  if (SERVER_IN_THE_WAY.has(problem.code)) {
    await store.returnJobItem(claim);
    return 'returned';
  }
  if (problem.code === 'internal_error') log.error({ err: error, job: claim.jobId, item: claim.index }, 'a job item failed');
  const ended = await store.finishJobItem(claim, { state: 'failed', problemCode: problem.code, problemDetail: problem.message, status: problem.status }, now().toISOString());
  if (ended) parts.onItemEnd?.('failed', problem.code);
  return 'ended';
}

/** Writes beside the file, then renames: a reader never sees half a result. */
async function writeAtomically(path: string, bytes: Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  // Two replicas redoing the same item must not share the partial file.
  const partial = `${path}.${randomBytes(6).toString('hex')}.partial`;
  await writeFile(partial, bytes);
  await rename(partial, path);
}
