/**
 * The dashboard's script, served from `/dashboard/assets/dashboard.<hash>.js`
 * (`asset-files.ts`): copy buttons, the try-it page's upload and subject's box, and the
 * helpers the Batch page's part (`batch.ts`, served after this one in the same file) uses.
 * The pages work without it except for those things.
 *
 * It runs in the browser as a classic script, so it imports and exports nothing: its own
 * `tsconfig.json` checks it against the DOM library, apart from the server's code.
 */

/** A rectangle in the photo's own (EXIF-oriented) pixels, as the API's `roi` takes it. */
interface Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** A point in the photo's own pixels. */
interface Point {
  x: number;
  y: number;
}

/** A box being drawn: the pointer drawing it, where it started on screen and on the photo. */
interface Drag {
  pointer: number;
  rect: DOMRect;
  x: number;
  y: number;
  start: Point;
}

/**
 * The element with this id, which the page must have and of this kind.
 * @example byId('try-file', HTMLInputElement).files
 */
function byId<T extends HTMLElement>(id: string, kind: { new (): T; prototype: T }): T {
  const found = document.getElementById(id);
  if (!(found instanceof kind)) throw new Error(`The page has no ${kind.name} #${id}`);
  return found;
}

function announce(el: HTMLElement | null, text: string): void {
  if (!el) return;
  el.textContent = text;
  setTimeout(() => {
    if (el.textContent === text) el.textContent = '';
  }, 2500);
}

async function copyText(text: string): Promise<boolean> {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // fall back below
    }
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  let done = false;
  try {
    done = document.execCommand('copy');
  } catch {
    done = false;
  }
  area.remove();
  return done;
}

document.querySelectorAll('[data-copy]').forEach((button) => {
  button.addEventListener('click', async () => {
    const target = document.getElementById(button.getAttribute('data-copy') ?? '');
    const status = document.getElementById(button.getAttribute('aria-describedby') ?? '');
    if (!target) return;
    const ok = await copyText((target.textContent ?? '').trim());
    const text = ok ? 'Copied' : 'Select and copy by hand';
    announce(status, text);
    // The button says it too, for a moment, without moving anything on the page.
    if (ok) {
      button.textContent = 'Copied ✓';
      setTimeout(() => {
        button.textContent = 'Copy';
      }, 2500);
    }
  });
});

/** The title and detail of an error's problem+json body, as the page shows them, or null without a detail. */
function problemText(problem: unknown): string | null {
  if (typeof problem !== 'object' || problem === null || !('detail' in problem) || !problem.detail) return null;
  return 'title' in problem && problem.title ? `${String(problem.title)}: ${String(problem.detail)}` : String(problem.detail);
}

/**
 * The output options set in a form's controls with `data-option="<name>"` (its own ones and
 * "More options", `views/option-controls.ts`), as the API takes them: empty is the server's
 * default, and is left out.
 */
function optionControlValues(root: ParentNode): [string, string][] {
  const values: [string, string][] = [];
  for (const control of root.querySelectorAll<HTMLInputElement | HTMLSelectElement>('[data-option]')) {
    const value = control.value.trim();
    if (value && control.dataset.option) values.push([control.dataset.option, value]);
  }
  return values;
}

/** The page's CSRF token, which every request that changes something carries in `x-csrf-token`. */
function pageCsrfToken(): string {
  const meta = document.querySelector('meta[name="csrf-token"]');
  if (!(meta instanceof HTMLMetaElement)) throw new Error('The page has no csrf-token meta tag');
  return meta.content;
}

/** What a failed request says: fetch rejects with a DOMException or a TypeError. */
function failureText(failure: unknown): string {
  return failure instanceof Error || failure instanceof DOMException ? failure.message : String(failure);
}

/** The try-it page: its form sends the chosen image, and a box drawn or typed over the photo sends it again. */
function tryIt(form: HTMLFormElement): void {
  const input = byId('try-file', HTMLInputElement);
  const drop = byId('drop', HTMLElement);
  const status = byId('try-status', HTMLElement);
  const uncertainty = byId('try-uncertainty', HTMLElement);
  const error = byId('try-error', HTMLElement);
  const compare = byId('compare', HTMLElement);
  const before = byId('before', HTMLImageElement);
  const after = byId('after', HTMLImageElement);
  const download = byId('download', HTMLAnchorElement);
  const stage = byId('roi-stage', HTMLElement);
  const boxView = byId('roi-box', HTMLElement);
  const roiForm = byId('try-roi', HTMLFormElement);
  const roiClear = byId('roi-clear', HTMLButtonElement);
  const roiSize = byId('roi-size', HTMLElement);
  const fields = ['x1', 'y1', 'x2', 'y2'].map((name) => byId('roi-' + name, HTMLInputElement));
  const csrf = pageCsrfToken();
  const EXTENSIONS: Partial<Record<string, string>> = { 'image/png': 'png', 'image/webp': 'webp', 'image/jpeg': 'jpg' };
  // The image whose cut is shown, its object URLs, and the request under way.
  let current: File | null = null;
  let beforeUrl: string | null = null;
  let afterUrl: string | null = null;
  let inFlight: AbortController | null = null;
  // The subject's box the cut was asked for, in the photo's own (EXIF-oriented) pixels, or null.
  let box: Box | null = null;
  // A box being drawn with a pointer.
  let drag: Drag | null = null;
  // Smaller than this on screen, in CSS pixels, a drag is a click, not a box.
  const SMALLEST_DRAWN_SIDE = 8;

  // The result's options as the API takes them, in the query string of the try-it endpoint.
  function options(): string {
    const query = new URLSearchParams();
    query.set('quality', byId('try-quality', HTMLSelectElement).value);
    query.set('format', byId('try-format', HTMLSelectElement).value);
    if (byId('try-background', HTMLSelectElement).value === 'colour') query.set('bg_color', byId('try-colour', HTMLInputElement).value);
    if (byId('try-crop', HTMLInputElement).checked) query.set('crop', 'true');
    const maxWidth = byId('try-max-width', HTMLInputElement).value.trim();
    if (maxWidth) query.set('max_width', maxWidth);
    const scale = byId('try-scale', HTMLSelectElement).value;
    if (scale !== 'original') query.set('scale', scale);
    const position = byId('try-position', HTMLSelectElement).value;
    if (position) query.set('position', position);
    if (byId('try-shadow', HTMLInputElement).checked) query.set('add_shadow', 'true');
    if (box) query.set('roi', [box.x1, box.y1, box.x2, box.y2].join(' '));
    // "More options": one control per option of the API's table without its own; empty is the default.
    for (const [name, value] of optionControlValues(form)) query.set(name, value);
    // Offered only when the server has more than one model.
    if (document.getElementById('try-model')) query.set('model', byId('try-model', HTMLSelectElement).value);
    return query.toString();
  }

  function showError(text: string): void {
    error.hidden = false;
    error.textContent = text;
  }

  // A fresh image replaces the photo and forgets its box; otherwise the shown photo is cut
  // again with the options and box as they are now.
  async function send(file: File | null | undefined, fresh: boolean): Promise<void> {
    if (!file) return;
    if (inFlight) inFlight.abort();
    const request = new AbortController();
    inFlight = request;
    error.hidden = true;
    if (fresh) {
      current = file;
      setBox(null);
      compare.hidden = true;
    }
    form.setAttribute('aria-busy', 'true');
    compare.setAttribute('aria-busy', 'true');
    status.textContent = box ? 'Cutting inside the box…' : 'Removing the background of ' + file.name + '…';
    const started = performance.now();
    try {
      const response = await fetch(form.action + '?' + options(), {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/octet-stream', 'x-csrf-token': csrf },
        body: file,
        signal: request.signal,
      });
      if (!response.ok) {
        let detail = 'The server answered ' + response.status + '.';
        try {
          detail = problemText(await response.json()) ?? detail;
        } catch {
          // not JSON
        }
        status.textContent = '';
        showError(detail);
        return;
      }
      const result = await response.blob();
      const extension = EXTENSIONS[result.type] || 'png';
      if (fresh) {
        if (beforeUrl) URL.revokeObjectURL(beforeUrl);
        beforeUrl = URL.createObjectURL(file);
        before.src = beforeUrl;
      }
      if (afterUrl) URL.revokeObjectURL(afterUrl);
      afterUrl = URL.createObjectURL(result);
      after.src = afterUrl;
      download.href = afterUrl;
      download.download = (file.name.replace(/\.[^.]+$/, '') || 'image') + '-cutout.' + extension;
      download.textContent = 'Download ' + extension.toUpperCase();
      compare.hidden = false;
      const seconds = ((performance.now() - started) / 1000).toFixed(1) + ' s.';
      status.textContent = box ? 'Cut inside the box in ' + seconds : 'Done in ' + seconds;
      // Beside the result, not in the status line, so that the photo above does not move.
      const doubt = Number(response.headers.get('x-uncertainty'));
      const looks = response.headers.get('x-looks');
      uncertainty.textContent = (Number.isFinite(doubt) ? 'uncertainty ' + doubt.toFixed(2) : '') + (looks === '2' ? ', two looks' : looks === '1' ? ', one look' : '');
      uncertainty.title = doubt >= 0.15 ? 'The model is unsure of this cut: look at it, or draw a box around the subject.' : '';
    } catch (e) {
      // A newer request replaced this one: it reports for both.
      if (e instanceof DOMException && e.name === 'AbortError') return;
      status.textContent = '';
      showError('The request failed: ' + failureText(e));
    } finally {
      if (inFlight === request) {
        inFlight = null;
        form.removeAttribute('aria-busy');
        compare.removeAttribute('aria-busy');
      }
      if (fresh) input.value = '';
    }
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void send(input.files?.[0], true);
  });
  input.addEventListener('change', () => void send(input.files?.[0], true));
  for (const name of ['dragenter', 'dragover'] as const) {
    drop.addEventListener(name, (event) => {
      event.preventDefault();
      drop.classList.add('over');
    });
  }
  for (const name of ['dragleave', 'drop'] as const) {
    drop.addEventListener(name, () => drop.classList.remove('over'));
  }
  drop.addEventListener('drop', (event) => {
    event.preventDefault();
    void send(event.dataTransfer?.files[0], true);
  });

  // The subject's box. The "before" image is shown scaled (and turned by its EXIF
  // orientation, as the pipeline turns it): its natural size is the photo's own, oriented,
  // so a point on screen maps to the photo by the ratio of the two.

  // Shows a box over the photo, in percent of its size, so it follows the image when the
  // page reflows; null hides it.
  function drawBox(shown: Box | null): void {
    const width = before.naturalWidth;
    const height = before.naturalHeight;
    if (!shown || !width || !height) {
      boxView.hidden = true;
      return;
    }
    boxView.style.left = (100 * shown.x1 / width) + '%';
    boxView.style.top = (100 * shown.y1 / height) + '%';
    boxView.style.width = (100 * (shown.x2 - shown.x1) / width) + '%';
    boxView.style.height = (100 * (shown.y2 - shown.y1) / height) + '%';
    boxView.hidden = false;
  }

  function setBox(chosen: Box | null): void {
    box = chosen;
    drawBox(box);
    fields.forEach((field, i) => {
      field.value = box ? String([box.x1, box.y1, box.x2, box.y2][i]) : '';
      field.setCustomValidity('');
    });
    if (!box && document.activeElement === roiClear) fields[0].focus();
    updateClear();
  }

  // Clear has something to clear: a box the cut was made in, or edges typed but not yet sent.
  function updateClear(): void {
    roiClear.disabled = !box && fields.every((field) => field.value === '');
  }

  before.addEventListener('load', () => {
    const width = before.naturalWidth;
    const height = before.naturalHeight;
    roiForm.hidden = false;
    roiSize.textContent = width + ' × ' + height + ', 0 0 at the top left';
    fields[0].max = String(width - 1);
    fields[1].max = String(height - 1);
    fields[2].max = String(width);
    fields[3].max = String(height);
    drawBox(box);
  });
  // A format this browser cannot show (TIFF, say) still gets its cut, but no box can be drawn on it.
  before.addEventListener('error', () => {
    roiForm.hidden = true;
    drawBox(null);
  });

  // Where a pointer event falls on the photo, in its own pixels, held inside it.
  function photoPoint(event: PointerEvent, rect: DOMRect): Point {
    const fx = Math.min(1, Math.max(0, (event.clientX - rect.left) / rect.width));
    const fy = Math.min(1, Math.max(0, (event.clientY - rect.top) / rect.height));
    return { x: fx * before.naturalWidth, y: fy * before.naturalHeight };
  }

  // The whole pixels a drag covers, from either corner to the other.
  function boxBetween(a: Point, b: Point): Box {
    return { x1: Math.floor(Math.min(a.x, b.x)), y1: Math.floor(Math.min(a.y, b.y)), x2: Math.ceil(Math.max(a.x, b.x)), y2: Math.ceil(Math.max(a.y, b.y)) };
  }

  function endDrag(): void {
    if (drag && stage.hasPointerCapture(drag.pointer)) stage.releasePointerCapture(drag.pointer);
    drag = null;
  }

  stage.addEventListener('pointerdown', (event) => {
    if (!current || !before.naturalWidth || drag || !event.isPrimary || event.button !== 0) return;
    event.preventDefault();
    const rect = before.getBoundingClientRect();
    drag = { pointer: event.pointerId, rect, x: event.clientX, y: event.clientY, start: photoPoint(event, rect) };
    stage.setPointerCapture(event.pointerId);
  });
  stage.addEventListener('pointermove', (event) => {
    if (!drag || event.pointerId !== drag.pointer) return;
    drawBox(boxBetween(drag.start, photoPoint(event, drag.rect)));
  });
  stage.addEventListener('pointerup', (event) => {
    if (!drag || event.pointerId !== drag.pointer) return;
    const big = Math.abs(event.clientX - drag.x) >= SMALLEST_DRAWN_SIDE && Math.abs(event.clientY - drag.y) >= SMALLEST_DRAWN_SIDE;
    const drawn = boxBetween(drag.start, photoPoint(event, drag.rect));
    endDrag();
    if (!big) {
      drawBox(box);
      return;
    }
    setBox(drawn);
    void send(current, false);
  });
  stage.addEventListener('pointercancel', (event) => {
    if (!drag || event.pointerId !== drag.pointer) return;
    endDrag();
    drawBox(box);
  });
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape' || !drag) return;
    endDrag();
    drawBox(box);
  });

  // Typed edges: shown over the photo as they are typed, sent on "Cut inside the box" (or Enter).
  function typedBox(): Box | null {
    const values = fields.map((field) => (field.value.trim() === '' ? NaN : Number(field.value)));
    if (!values.every(Number.isInteger)) return null;
    return { x1: values[0], y1: values[1], x2: values[2], y2: values[3] };
  }

  for (const field of fields) {
    field.addEventListener('input', () => {
      const typed = typedBox();
      fields[2].setCustomValidity(typed && typed.x2 <= typed.x1 ? 'Right must be more than Left.' : '');
      fields[3].setCustomValidity(typed && typed.y2 <= typed.y1 ? 'Bottom must be more than Top.' : '');
      drawBox(typed && fields.every((f) => f.checkValidity()) ? typed : box);
      updateClear();
    });
  }
  roiForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const typed = typedBox();
    if (!current || !typed) return;
    setBox(typed);
    void send(current, false);
  });
  roiClear.addEventListener('click', () => {
    const sent = box;
    setBox(null);
    if (current && sent) void send(current, false);
  });
}

const tryItForm = document.getElementById('try-it');
if (tryItForm instanceof HTMLFormElement) tryIt(tryItForm);
