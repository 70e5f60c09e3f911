/**
 * The dashboard's only script, served from `/dashboard/assets/dashboard.js`: copy buttons,
 * and the try-it page's upload. Plain browser JavaScript; the pages work without it except
 * for those two things.
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
  var error = document.getElementById('try-error');
  var compare = document.getElementById('compare');
  var before = document.getElementById('before');
  var after = document.getElementById('after');
  var download = document.getElementById('download');
  var csrf = document.querySelector('meta[name="csrf-token"]').content;
  var urls = [];
  var EXTENSIONS = { 'image/png': 'png', 'image/webp': 'webp', 'image/jpeg': 'jpg' };

  // The result's options as the API takes them, in the query string of the try-it endpoint.
  function options() {
    var query = new URLSearchParams();
    query.set('format', document.getElementById('try-format').value);
    if (document.getElementById('try-background').value === 'colour') query.set('bg_color', document.getElementById('try-colour').value);
    if (document.getElementById('try-crop').checked) query.set('crop', 'true');
    var maxWidth = document.getElementById('try-max-width').value.trim();
    if (maxWidth) query.set('max_width', maxWidth);
    var model = document.getElementById('try-model');
    if (model) query.set('model', model.value);
    return query.toString();
  }

  function showError(text) {
    error.hidden = false;
    error.textContent = text;
  }

  async function send(file) {
    if (!file) return;
    urls.forEach(function (url) { URL.revokeObjectURL(url); });
    urls = [];
    error.hidden = true;
    compare.hidden = true;
    form.setAttribute('aria-busy', 'true');
    status.textContent = 'Removing the background of ' + file.name + '…';
    var started = performance.now();
    try {
      var response = await fetch(form.action + '?' + options(), {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/octet-stream', 'x-csrf-token': csrf },
        body: file,
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
      var beforeUrl = URL.createObjectURL(file);
      var afterUrl = URL.createObjectURL(result);
      urls.push(beforeUrl, afterUrl);
      before.src = beforeUrl;
      after.src = afterUrl;
      download.href = afterUrl;
      download.download = (file.name.replace(/\.[^.]+$/, '') || 'image') + '-cutout.' + extension;
      download.textContent = 'Download ' + extension.toUpperCase();
      compare.hidden = false;
      status.textContent = 'Done in ' + ((performance.now() - started) / 1000).toFixed(1) + ' s.';
    } catch (e) {
      status.textContent = '';
      showError('The request failed: ' + e.message);
    } finally {
      form.removeAttribute('aria-busy');
      input.value = '';
    }
  }

  form.addEventListener('submit', function (event) { event.preventDefault(); send(input.files[0]); });
  input.addEventListener('change', function () { send(input.files[0]); });
  ['dragenter', 'dragover'].forEach(function (name) {
    drop.addEventListener(name, function (event) { event.preventDefault(); drop.classList.add('over'); });
  });
  ['dragleave', 'drop'].forEach(function (name) {
    drop.addEventListener(name, function () { drop.classList.remove('over'); });
  });
  drop.addEventListener('drop', function (event) {
    event.preventDefault();
    var file = event.dataTransfer && event.dataTransfer.files[0];
    send(file);
  });
})();
`;
