import type { OptionName } from '../../options/option-table.js';
import type { DashboardSession, UserToken } from '../../store/store.js';
import type { BatchJob } from '../batch-job.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField, renderPage } from './layout.js';
import { moreOptions } from './option-controls.js';
import { when } from './tokens-page.js';

export interface BatchPageOptions {
  session: DashboardSession;
  csrf: string;
  /** The account's tokens that may make a job now (neither revoked nor expired), the default first. */
  tokens: UserToken[];
  /** The account's recent jobs, newest first. */
  jobs: BatchJob[];
  /** Every token's name by id, for the list (a job's token may be revoked since). */
  tokenNames: Map<string, string>;
  /** CUTOUT_JOB_RETENTION, in seconds. */
  retentionSeconds: number;
}

/** The options with a control of their own on this page; every other native option is under "More options". */
const OWN_CONTROLS: readonly OptionName[] = ['format'];

const FOLDER_ICON = html`<svg width="40" height="40" viewBox="0 0 24 24" aria-hidden="true" fill="none" stroke="#3b5bdb" stroke-width="1.6" stroke-linecap="round" stroke-linejoin="round"><path d="M3 7a2 2 0 0 1 2-2h4l2 2h8a2 2 0 0 1 2 2v8a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2z"/><path d="M12 16v-6m0 0-3 3m3-3 3 3"/></svg>`;

const plural = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`;

/** How long results are kept, in the largest whole unit. */
function retentionText(seconds: number): string {
  if (seconds % 86_400 === 0) return plural(seconds / 86_400, 'day', 'days');
  if (seconds % 3600 === 0) return plural(seconds / 3600, 'hour', 'hours');
  return plural(Math.round(seconds / 60), 'minute', 'minutes');
}

/**
 * One job of the list, as the server first shows it; the script (`batch.ts`) keeps the same
 * parts up to date while the job runs (the status, the progress, the counts, the links), and
 * clones the empty one in `<template>` for a job made on the page.
 */
function jobRow(job: BatchJob | null, csrf: string, tokenName: string): SafeHtml {
  const id = job?.id ?? '';
  const total = job?.counts.total ?? 0;
  const ended = job ? job.counts.succeeded + job.counts.failed : 0;
  const open = !job || job.status === 'queued' || job.status === 'running';
  return html`<li class="job" data-job="${id}" data-url="${job?.status_url ?? ''}" data-status="${job?.status ?? 'queued'}">
    <div class="job-line">
      <span class="job-title"><strong class="job-size">${plural(total, 'image', 'images')}</strong>
        <span class="muted">· <span class="job-token">${tokenName}</span> · <span class="job-created">${job ? when(job.created_at) : ''}</span></span></span>
      <span class="badge job-status ${job?.status ?? 'queued'}">${job?.status ?? 'queued'}</span>
    </div>
    <progress class="job-progress" max="${Math.max(total, 1)}" value="${ended}" aria-label="Progress of job ${id}"></progress>
    <div class="job-line">
      <span class="job-counts">${job ? countsText(job) : ''}</span>
      <span class="job-pace muted">${job?.progress_text ?? ''}</span>
      <span class="job-actions">
        <a class="button small secondary job-download" href="${job?.results_url ?? ''}" download${job && job.counts.succeeded > 0 ? '' : html` hidden`}>${job && open ? 'Download the finished' : 'Download zip'}</a>
        <form class="job-cancel" method="post" action="${job ? `${job.status_url}/cancel` : ''}"${open ? '' : html` hidden`}>${csrfField(csrf)}<button type="submit" class="button small danger">Cancel</button></form>
      </span>
    </div>
    <code class="job-id">${id}</code>
  </li>`;
}

/** "3 of 12 done: 2 cut, 1 failed" (and how many were cancelled), as the script writes it too. */
function countsText(job: BatchJob): string {
  const { total, succeeded, failed, cancelled } = job.counts;
  return `${succeeded + failed} of ${total} done: ${succeeded} cut, ${failed} failed${cancelled ? `, ${cancelled} cancelled` : ''}`;
}

/**
 * The Batch page: drop files, a zip or a whole folder (or choose them), or paste image URLs;
 * choose the output options and the token the job is counted against; one job is made of
 * them all. The account's recent jobs are listed below with their progress, their results'
 * zip and a Cancel button.
 */
export function batchPage(options: BatchPageOptions): string {
  const { session, csrf, tokens, jobs, tokenNames, retentionSeconds } = options;
  const noToken = tokens.length === 0;
  const body = html`<div class="page-head"><h1>Batch</h1>
  <p class="muted">Many images in one job, cut with the same options while the model has time between API requests. Results are kept for ${retentionText(retentionSeconds)} after the job ends.</p></div>
  <section class="card" aria-labelledby="batch-new">
    <h2 id="batch-new">New job</h2>
    ${noToken ? html`<p class="notice warn" id="batch-no-token">A job is counted against one of your tokens, and this account has none that is active: <a href="/dashboard/tokens">create a token</a> first.</p>` : ''}
    <form id="batch" class="batch-form" action="/dashboard/batch/jobs" method="post">
      <div class="drop batch-drop" id="batch-drop">${FOLDER_ICON}
        <strong>Drop images, zip archives or a whole folder here</strong>
        <span class="hint" id="batch-kinds">JPEG, PNG, WebP, GIF, TIFF, AVIF, HEIC, and zips of them; files that are not images are left out.</span>
        <div class="pickers">
          <label class="button secondary small picker">Choose files<input type="file" id="batch-files" multiple accept="image/*,.heic,.heif,.zip,application/zip" aria-describedby="batch-kinds"></label>
          <label class="button secondary small picker">Choose a folder<input type="file" id="batch-folder" webkitdirectory multiple aria-describedby="batch-kinds"></label>
        </div>
      </div>
      <div class="chosen" id="batch-chosen" hidden>
        <p id="batch-chosen-text"></p>
        <button type="button" class="button small link" id="batch-clear">Clear the files</button>
      </div>
      <label class="urls" for="batch-urls">Or image URLs, one per line
        <span class="hint">http(s) addresses Cutout fetches itself, with the guards of the API's URL endpoint. A job holds either files or URLs.</span></label>
      <textarea id="batch-urls" rows="4" spellcheck="false" autocomplete="off" placeholder="https://shop.example/a.jpg&#10;https://shop.example/b.jpg"></textarea>
      <fieldset class="options" id="batch-options"><legend>Result</legend>
        <label>Token <select id="batch-token" name="token"${noToken ? html` disabled` : ''}>${tokens.map((token) => html`<option value="${token.id}">${token.name} (${token.prefix}…)</option>`)}</select></label>
        <label>Format <select id="batch-format" data-option="format"><option value="png">PNG</option><option value="webp">WebP</option><option value="jpg">JPEG</option></select></label>
        ${moreOptions('batch', OWN_CONTROLS)}
        <p class="hint">The job counts against the token's limits and usage, as a job made with the API would.</p>
      </fieldset>
      <noscript><p class="notice warn">This page needs JavaScript to send the images.</p></noscript>
      <div class="submit-line">
        <button type="submit" class="button" id="batch-submit"${noToken ? html` disabled` : ''}>Start the job</button>
        <progress id="batch-upload" max="100" value="0" aria-label="Upload" hidden></progress>
      </div>
      <div id="batch-status" class="status" role="status" aria-live="polite"></div>
      <div id="batch-error" class="notice error" role="alert" hidden></div>
    </form>
  </section>
  <section class="card" aria-labelledby="batch-recent">
    <h2 id="batch-recent">Recent jobs</h2>
    <p class="empty" id="batch-none"${jobs.length ? html` hidden` : ''}>No job yet.</p>
    <ul class="jobs" id="batch-jobs">${jobs.map((job) => jobRow(job, csrf, tokenNames.get(job.user_token_id) ?? ''))}</ul>
    <template id="batch-job-template">${jobRow(null, csrf, '')}</template>
  </section>`;
  return renderPage({ title: 'Batch', csrf, session, active: 'batch', body });
}
