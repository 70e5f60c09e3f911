/**
 * The TypeScript client of Cutout, a self-hosted background-removal service. No
 * dependencies: it runs wherever the platform has `fetch` (Node 20.3+, browsers, Deno, Bun).
 *
 * @example
 * import { CutoutClient, CutoutApiError } from '@cutout/client';
 *
 * const cutout = new CutoutClient({ baseUrl: 'http://127.0.0.1:8080', tokenId: 'cut_user_…' });
 * const { bytes, contentType, width, height, foreground } = await cutout.removeBackground(photoBytes, { format: 'webp' });
 */
export { CutoutClient, type CutoutClientOptions, type RemovalInput, type RemoveBackgroundOptions } from './cutout-client.js';
export { CutoutJobs, type CreateJobOptions, type Job, type JobCallOptions, type JobImage, type JobItem, type JobItemState, type JobPage, type JobProgress, type JobStatus } from './cutout-jobs.js';
export { CutoutApiError, type ClientErrorCode, type CutoutApiErrorInit, type CutoutErrorCode } from './cutout-api-error.js';
export { SERVER_ERROR_STATUS, type ServerErrorCode } from './error-codes.js';
export { OUTPUT_OPTION_NAMES, type OutputOptions } from './output-options.js';
export type { ForegroundBox, RemovalResult } from './removal-result.js';
export { DEFAULT_RETRY, type RetryOptions } from './retry-policy.js';
export type { RetryEvent } from './with-retries.js';
export type { FetchFunction } from './http-attempt.js';
