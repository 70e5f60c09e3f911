import type { DashboardSession } from '../../store/store.js';
import type { Quality } from '../../pipeline/views.js';
import type { OptionName } from '../../options/option-table.js';
import { html } from '../html.js';
import { renderPage } from './layout.js';
import { moreOptions } from './option-controls.js';

const UPLOAD_ICON = html`<svg width="40" height="40" viewBox="0 0 24 24" aria-hidden="true" fill="none" stroke="#3b5bdb" stroke-width="1.6" stroke-linecap="round" stroke-linejoin="round"><path d="M12 16V4m0 0-4 4m4-4 4 4"/><path d="M4 16v3a1 1 0 0 0 1 1h14a1 1 0 0 0 1-1v-3"/></svg>`;

/**
 * The person's hint for a photo whose subject the model got wrong: a box drawn over the
 * "before" image with a pointer (the script fills these fields from it), or typed here in the
 * photo's own pixels. Either way the page sends it as the API's `roi`.
 */
const SUBJECT_BOX_FORM = html`<form id="try-roi" class="roi">
          <fieldset><legend>Subject's box</legend>
            <p class="hint" id="roi-help">Wrong subject? Drag a box over the photo around the one you want, or type its edges in the photo's pixels (<span id="roi-size">0 0 at the top left</span>), and the cut is made again inside it.</p>
            <div class="roi-fields">
              <label>Left <input type="number" id="roi-x1" name="x1" min="0" step="1" inputmode="numeric" required aria-describedby="roi-help"></label>
              <label>Top <input type="number" id="roi-y1" name="y1" min="0" step="1" inputmode="numeric" required></label>
              <label>Right <input type="number" id="roi-x2" name="x2" min="1" step="1" inputmode="numeric" required></label>
              <label>Bottom <input type="number" id="roi-y2" name="y2" min="1" step="1" inputmode="numeric" required></label>
            </div>
            <div class="roi-actions"><button type="submit" class="button small">Cut inside the box</button>
              <button type="button" id="roi-clear" class="button small secondary" disabled>Clear the box</button></div>
          </fieldset>
        </form>`;

/** The quality choices, the server's default (CUTOUT_QUALITY) selected when the page is made. */
const QUALITY_CHOICES: [Quality, string][] = [
  ['auto', 'Auto: a second look when in doubt'],
  ['best', 'Best: two looks, fused'],
  ['fast', 'Fast: one look'],
];

/**
 * The subject's size on the canvas, as the API's `scale`: the first (`original`, the API's
 * default) is not sent.
 */
const SCALE_CHOICES: [string, string][] = [
  ['original', 'As it is'],
  ['90%', '90 %'],
  ['75%', '75 %'],
  ['50%', '50 %'],
  ['25%', '25 %'],
];

/**
 * Where the subject stands, as the API's `position`. The first is not sent, so the API's own
 * default applies: centred when scaled, else where it was.
 */
const POSITION_CHOICES: [string, string][] = [
  ['', 'Centred if smaller'],
  ['original', 'Where it was'],
  ['center', 'Centre'],
  ['50% 0%', 'Top'],
  ['50% 100%', 'Bottom'],
  ['0% 50%', 'Left'],
  ['100% 50%', 'Right'],
];

/** The options with a control of their own above; every other native option is under "More options". */
const OWN_CONTROLS: readonly OptionName[] = ['quality', 'model', 'format', 'bg_color', 'crop', 'max_width', 'scale', 'position', 'add_shadow', 'roi'];

/**
 * Choose the result's options, drop or choose an image; see it before and after, side by
 * side; download the result; box the subject when the model chose the wrong one. `quality` is
 * the server's default; `models` are its loaded models, the default first: with more than
 * one, a menu picks the one that cuts.
 */
export function tryItPage(session: DashboardSession, csrf: string, maxImageBytes: number, quality: Quality, models: readonly string[] = []): string {
  const limit = maxImageBytes >= 1024 * 1024 ? `${Math.floor(maxImageBytes / (1024 * 1024))} MiB` : `${Math.floor(maxImageBytes / 1024)} KiB`;
  const body = html`<div class="page-head"><h1>Try it</h1>
  <p class="muted">Runs the same pipeline and waits in the same queue as the API. Nothing is stored, and it is not counted in Usage.</p></div>
  <section class="card">
    <form id="try-it" action="/dashboard/try-it/remove" method="post">
      <label class="drop" id="drop" for="try-file">${UPLOAD_ICON}
        <strong>Drop an image here, or choose one</strong>
        <span class="hint">JPEG, PNG, WebP, GIF, TIFF, AVIF or HEIC (iPhone), up to ${limit}.</span>
        <input type="file" id="try-file" name="file" accept="image/*,.heic,.heif">
      </label>
      <fieldset class="options" id="try-options"><legend>Result</legend>
        <label>Quality <select name="quality" id="try-quality">${QUALITY_CHOICES.map(([value, text]) => html`<option value="${value}"${value === quality && html` selected`}>${text}</option>`)}</select></label>
        ${models.length > 1 ? html`<label>Model <select name="model" id="try-model">${models.map((name) => html`<option value="${name}">${name}</option>`)}</select></label>` : ''}
        <label>Format <select name="format" id="try-format"><option value="png">PNG</option><option value="webp">WebP</option><option value="jpg">JPEG</option></select></label>
        <label>Background <select name="background" id="try-background"><option value="transparent">Transparent</option><option value="colour">Colour</option></select></label>
        <label>Colour <input type="color" name="bg_color" id="try-colour" value="#ffffff"></label>
        <label class="check"><input type="checkbox" name="crop" id="try-crop" value="true"> Crop to the subject</label>
        <label>Largest width <input type="number" name="max_width" id="try-max-width" min="1" max="65535" step="1" placeholder="full size" inputmode="numeric"></label>
        <label>Subject's size <select name="scale" id="try-scale">${SCALE_CHOICES.map(([value, text]) => html`<option value="${value}">${text}</option>`)}</select></label>
        <label>Subject's place <select name="position" id="try-position">${POSITION_CHOICES.map(([value, text]) => html`<option value="${value}">${text}</option>`)}</select></label>
        <label class="check"><input type="checkbox" name="add_shadow" id="try-shadow" value="true"> Shadow under the subject</label>
        ${moreOptions('try', OWN_CONTROLS)}
        <p class="hint">JPEG has no transparency: without a colour it is on white. A smaller subject keeps the canvas and is centred unless you choose its place. The options apply to the next image you choose or box you draw.</p>
      </fieldset>
      <noscript><p class="notice warn">This page needs JavaScript to send the image and show the result.</p></noscript>
      <div id="try-status" class="status" role="status" aria-live="polite"></div>
      <div id="try-error" class="notice error" role="alert" hidden></div>
    </form>
    <div id="compare" class="compare" hidden>
      <figure><figcaption>Before</figcaption>
        <div class="frame"><div class="roi-stage" id="roi-stage"><img id="before" alt="The image you chose" draggable="false"><div class="roi-box" id="roi-box" aria-hidden="true" hidden></div></div></div>
        ${SUBJECT_BOX_FORM}</figure>
      <figure><figcaption><span>After <span class="muted" id="try-uncertainty"></span></span><a id="download" class="button small" href="#" download>Download</a></figcaption>
        <div class="frame checker"><img id="after" alt="The same image with its background removed"></div></figure>
    </div>
  </section>`;
  return renderPage({ title: 'Try it', csrf, session, active: 'try-it', body });
}
