/**
 * The dashboard's only script, served from `/dashboard/assets/dashboard.js`: copy buttons,
 * and the try-it page's upload and subject's box. Plain browser JavaScript; the pages work
 * without it except for those things.
 */
export const DASHBOARD_JS = String.raw`
'use strict';

function announce(el, text) {
  if (!el) return;
  el.textContent = text;
  setTimeout(function () { if (el.textContent === text) el.textContent = ''; }, 2500);
}

async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    try { await navigator.clipboard.writeText(text); return true; } catch (e) { /* fall back below */ }
  }
  var area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  var done = false;
  try { done = document.execCommand('copy'); } catch (e) { done = false; }
  area.remove();
  return done;
}

document.querySelectorAll('[data-copy]').forEach(function (button) {
  button.addEventListener('click', async function () {
    var target = document.getElementById(button.getAttribute('data-copy'));
    var status = document.getElementById(button.getAttribute('aria-describedby'));
    if (!target) return;
    var ok = await copyText(target.textContent.trim());
    var text = ok ? 'Copied' : 'Select and copy by hand';
    announce(status, text);
    // The button says it too, for a moment, without moving anything on the page.
    if (ok) {
      button.textContent = 'Copied ✓';
      setTimeout(function () { button.textContent = 'Copy'; }, 2500);
    }
  });
});

(function tryIt() {
  var form = document.getElementById('try-it');
  if (!form) return;
  var input = document.getElementById('try-file');
  var drop = document.getElementById('drop');
  var status = document.getElementById('try-status');
  var uncertainty = document.getElementById('try-uncertainty');
  var error = document.getElementById('try-error');
  var compare = document.getElementById('compare');
  var before = document.getElementById('before');
  var after = document.getElementById('after');
  var download = document.getElementById('download');
  var stage = document.getElementById('roi-stage');
  var boxView = document.getElementById('roi-box');
  var roiForm = document.getElementById('try-roi');
  var roiClear = document.getElementById('roi-clear');
  var roiSize = document.getElementById('roi-size');
  var fields = ['x1', 'y1', 'x2', 'y2'].map(function (name) { return document.getElementById('roi-' + name); });
  var csrf = document.querySelector('meta[name="csrf-token"]').content;
  var EXTENSIONS = { 'image/png': 'png', 'image/webp': 'webp', 'image/jpeg': 'jpg' };
  // The image whose cut is shown, its object URLs, and the request under way.
  var current = null;
  var beforeUrl = null;
  var afterUrl = null;
  var inFlight = null;
  // The subject's box the cut was asked for, in the photo's own (EXIF-oriented) pixels, or null.
  var box = null;
  // A box being drawn with a pointer.
  var drag = null;
  // Smaller than this on screen, in CSS pixels, a drag is a click, not a box.
  var SMALLEST_DRAWN_SIDE = 8;

  // The result's options as the API takes them, in the query string of the try-it endpoint.
  function options() {
    var query = new URLSearchParams();
    query.set('quality', document.getElementById('try-quality').value);
    query.set('format', document.getElementById('try-format').value);
    if (document.getElementById('try-background').value === 'colour') query.set('bg_color', document.getElementById('try-colour').value);
    if (document.getElementById('try-crop').checked) query.set('crop', 'true');
    var maxWidth = document.getElementById('try-max-width').value.trim();
    if (maxWidth) query.set('max_width', maxWidth);
    var scale = document.getElementById('try-scale').value;
    if (scale !== 'original') query.set('scale', scale);
    var position = document.getElementById('try-position').value;
    if (position) query.set('position', position);
    if (document.getElementById('try-shadow').checked) query.set('add_shadow', 'true');
    if (box) query.set('roi', [box.x1, box.y1, box.x2, box.y2].join(' '));
    var model = document.getElementById('try-model');
    if (model) query.set('model', model.value);
    return query.toString();
  }

  function showError(text) {
    error.hidden = false;
    error.textContent = text;
  }

  // A fresh image replaces the photo and forgets its box; otherwise the shown photo is cut
  // again with the options and box as they are now.
  async function send(file, fresh) {
    if (!file) return;
    if (inFlight) inFlight.abort();
    var request = new AbortController();
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
    var started = performance.now();
    try {
      var response = await fetch(form.action + '?' + options(), {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/octet-stream', 'x-csrf-token': csrf },
        body: file,
        signal: request.signal,
      });
      if (!response.ok) {
        var detail = 'The server answered ' + response.status + '.';
        try {
          var problem = await response.json();
          if (problem && problem.detail) detail = problem.title ? problem.title + ': ' + problem.detail : problem.detail;
        } catch (e) { /* not JSON */ }
        status.textContent = '';
        showError(detail);
        return;
      }
      var result = await response.blob();
      var extension = EXTENSIONS[result.type] || 'png';
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
      var seconds = ((performance.now() - started) / 1000).toFixed(1) + ' s.';
      status.textContent = box ? 'Cut inside the box in ' + seconds : 'Done in ' + seconds;
      // Beside the result, not in the status line, so that the photo above does not move.
      var doubt = Number(response.headers.get('x-uncertainty'));
      uncertainty.textContent = Number.isFinite(doubt) ? 'uncertainty ' + doubt.toFixed(2) : '';
      uncertainty.title = doubt >= 0.15 ? 'The model is unsure of this cut: look at it, or draw a box around the subject.' : '';
    } catch (e) {
      // A newer request replaced this one: it reports for both.
      if (e.name === 'AbortError') return;
      status.textContent = '';
      showError('The request failed: ' + e.message);
    } finally {
      if (inFlight === request) {
        inFlight = null;
        form.removeAttribute('aria-busy');
        compare.removeAttribute('aria-busy');
      }
      if (fresh) input.value = '';
    }
  }

  form.addEventListener('submit', function (event) { event.preventDefault(); send(input.files[0], true); });
  input.addEventListener('change', function () { send(input.files[0], true); });
  ['dragenter', 'dragover'].forEach(function (name) {
    drop.addEventListener(name, function (event) { event.preventDefault(); drop.classList.add('over'); });
  });
  ['dragleave', 'drop'].forEach(function (name) {
    drop.addEventListener(name, function () { drop.classList.remove('over'); });
  });
  drop.addEventListener('drop', function (event) {
    event.preventDefault();
    var file = event.dataTransfer && event.dataTransfer.files[0];
    send(file, true);
  });

  // The subject's box. The "before" image is shown scaled (and turned by its EXIF
  // orientation, as the pipeline turns it): its natural size is the photo's own, oriented,
  // so a point on screen maps to the photo by the ratio of the two.

  // Shows a box over the photo, in percent of its size, so it follows the image when the
  // page reflows; null hides it.
  function drawBox(shown) {
    var width = before.naturalWidth;
    var height = before.naturalHeight;
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

  function setBox(chosen) {
    box = chosen;
    drawBox(box);
    fields.forEach(function (field, i) {
      field.value = box ? String([box.x1, box.y1, box.x2, box.y2][i]) : '';
      field.setCustomValidity('');
    });
    if (!box && document.activeElement === roiClear) fields[0].focus();
    updateClear();
  }

  // Clear has something to clear: a box the cut was made in, or edges typed but not yet sent.
  function updateClear() {
    roiClear.disabled = !box && fields.every(function (field) { return field.value === ''; });
  }

  before.addEventListener('load', function () {
    var width = before.naturalWidth;
    var height = before.naturalHeight;
    roiForm.hidden = false;
    roiSize.textContent = width + ' × ' + height + ', 0 0 at the top left';
    fields[0].max = String(width - 1);
    fields[1].max = String(height - 1);
    fields[2].max = String(width);
    fields[3].max = String(height);
    drawBox(box);
  });
  // A format this browser cannot show (TIFF, say) still gets its cut, but no box can be drawn on it.
  before.addEventListener('error', function () { roiForm.hidden = true; drawBox(null); });

  // Where a pointer event falls on the photo, in its own pixels, held inside it.
  function photoPoint(event, rect) {
    var fx = Math.min(1, Math.max(0, (event.clientX - rect.left) / rect.width));
    var fy = Math.min(1, Math.max(0, (event.clientY - rect.top) / rect.height));
    return { x: fx * before.naturalWidth, y: fy * before.naturalHeight };
  }

  // The whole pixels a drag covers, from either corner to the other.
  function boxBetween(a, b) {
    return { x1: Math.floor(Math.min(a.x, b.x)), y1: Math.floor(Math.min(a.y, b.y)), x2: Math.ceil(Math.max(a.x, b.x)), y2: Math.ceil(Math.max(a.y, b.y)) };
  }

  function endDrag() {
    if (drag && stage.hasPointerCapture(drag.pointer)) stage.releasePointerCapture(drag.pointer);
    drag = null;
  }

  stage.addEventListener('pointerdown', function (event) {
    if (!current || !before.naturalWidth || drag || !event.isPrimary || event.button !== 0) return;
    event.preventDefault();
    var rect = before.getBoundingClientRect();
    drag = { pointer: event.pointerId, rect: rect, x: event.clientX, y: event.clientY, start: photoPoint(event, rect) };
    stage.setPointerCapture(event.pointerId);
  });
  stage.addEventListener('pointermove', function (event) {
    if (!drag || event.pointerId !== drag.pointer) return;
    drawBox(boxBetween(drag.start, photoPoint(event, drag.rect)));
  });
  stage.addEventListener('pointerup', function (event) {
    if (!drag || event.pointerId !== drag.pointer) return;
    var big = Math.abs(event.clientX - drag.x) >= SMALLEST_DRAWN_SIDE && Math.abs(event.clientY - drag.y) >= SMALLEST_DRAWN_SIDE;
    var drawn = boxBetween(drag.start, photoPoint(event, drag.rect));
    endDrag();
    if (!big) {
      drawBox(box);
      return;
    }
    setBox(drawn);
    send(current, false);
  });
  stage.addEventListener('pointercancel', function (event) {
    if (!drag || event.pointerId !== drag.pointer) return;
    endDrag();
    drawBox(box);
  });
  document.addEventListener('keydown', function (event) {
    if (event.key !== 'Escape' || !drag) return;
    endDrag();
    drawBox(box);
  });

  // Typed edges: shown over the photo as they are typed, sent on "Cut inside the box" (or Enter).
  function typedBox() {
    var values = fields.map(function (field) { return field.value.trim() === '' ? NaN : Number(field.value); });
    if (!values.every(Number.isInteger)) return null;
    return { x1: values[0], y1: values[1], x2: values[2], y2: values[3] };
  }

  fields.forEach(function (field) {
    field.addEventListener('input', function () {
      var typed = typedBox();
      fields[2].setCustomValidity(typed && typed.x2 <= typed.x1 ? 'Right must be more than Left.' : '');
      fields[3].setCustomValidity(typed && typed.y2 <= typed.y1 ? 'Bottom must be more than Top.' : '');
      drawBox(typed && fields.every(function (f) { return f.checkValidity(); }) ? typed : box);
      updateClear();
    });
  });
  roiForm.addEventListener('submit', function (event) {
    event.preventDefault();
    var typed = typedBox();
    if (!current || !typed) return;
    setBox(typed);
    send(current, false);
  });
  roiClear.addEventListener('click', function () {
    var sent = box;
    setBox(null);
    if (current && sent) send(current, false);
  });
})();
`;
