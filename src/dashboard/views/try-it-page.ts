import type { DashboardSession } from '../../store/store.js';
import { html } from '../html.js';
import { renderPage } from './layout.js';

const UPLOAD_ICON = html`<svg width="40" height="40" viewBox="0 0 24 24" aria-hidden="true" fill="none" stroke="#3b5bdb" stroke-width="1.6" stroke-linecap="round" stroke-linejoin="round"><path d="M12 16V4m0 0-4 4m4-4 4 4"/><path d="M4 16v3a1 1 0 0 0 1 1h14a1 1 0 0 0 1-1v-3"/></svg>`;

/**
 * Choose the result's options, drop or choose an image; see it before and after, side by side;
 * download the result. `models` are the server's loaded models, the default first: with more
 * than one, a menu picks the one that cuts.
 */
export function tryItPage(session: DashboardSession, csrf: string, maxImageBytes: number, models: readonly string[] = []): string {
  const limit = maxImageBytes >= 1024 * 1024 ? `${Math.floor(maxImageBytes / (1024 * 1024))} MiB` : `${Math.floor(maxImageBytes / 1024)} KiB`;
  const body = html`<div class="page-head"><h1>Try it</h1>
  <p class="muted">Runs the same pipeline and waits in the same queue as the API. Nothing is stored, and it is not counted in Usage.</p></div>
  <section class="card">
    <form id="try-it" action="/dashboard/try-it/remove" method="post">
      <label class="drop" id="drop" for="try-file">${UPLOAD_ICON}
        <strong>Drop an image here, or choose one</strong>
        <span class="hint">JPEG, PNG, WebP, GIF, TIFF or AVIF, up to ${limit}.</span>
        <input type="file" id="try-file" name="file" accept="image/*">
      </label>
      <fieldset class="options" id="try-options"><legend>Result</legend>
        ${models.length > 1 ? html`<label>Model <select name="model" id="try-model">${models.map((name) => html`<option value="${name}">${name}</option>`)}</select></label>` : ''}
        <label>Format <select name="format" id="try-format"><option value="png">PNG</option><option value="webp">WebP</option><option value="jpg">JPEG</option></select></label>
        <label>Background <select name="background" id="try-background"><option value="transparent">Transparent</option><option value="colour">Colour</option></select></label>
        <label>Colour <input type="color" name="bg_color" id="try-colour" value="#ffffff"></label>
        <label class="check"><input type="checkbox" name="crop" id="try-crop" value="true"> Crop to the subject</label>
        <label>Largest width <input type="number" name="max_width" id="try-max-width" min="1" max="65535" step="1" placeholder="full size" inputmode="numeric"></label>
        <p class="hint">JPEG has no transparency: without a colour it is on white. The options apply to the next image you choose.</p>
      </fieldset>
      <noscript><p class="notice warn">This page needs JavaScript to send the image and show the result.</p></noscript>
      <div id="try-status" class="status" role="status" aria-live="polite"></div>
      <div id="try-error" class="notice error" role="alert" hidden></div>
    </form>
    <div id="compare" class="compare" hidden>
      <figure><figcaption>Before</figcaption><div class="frame"><img id="before" alt="The image you chose"></div></figure>
      <figure><figcaption><span>After</span><a id="download" class="button small" href="#" download>Download</a></figcaption>
        <div class="frame checker"><img id="after" alt="The same image with its background removed"></div></figure>
    </div>
  </section>`;
  return renderPage({ title: 'Try it', csrf, session, active: 'try-it', body });
}
