/**
 * The Batch page's part of the dashboard's script (`views/batch-page.ts`): files, zips and
 * folders chosen or dropped, or URLs pasted, sent as one job to the dashboard's job endpoints
 * (`routes/batch-routes.ts`), with the upload's progress; then every unfinished job of the
 * list followed until it ends. Served after `dashboard.ts` in the same classic script, whose
 * helpers (`byId`, `problemText`, `optionControlValues`, …) it uses.
 */

/** A file for the job, with its path in the folder it came from (its name when chosen alone). */
interface ChosenFile {
  file: File;
  path: string;
}

/** A job as the dashboard's endpoints answer it (`batch-job.ts`). */
interface BatchJobView {
  id: string;
  status: 'queued' | 'running' | 'done' | 'cancelled';
  counts: { total: number; queued: number; running: number; succeeded: number; failed: number; cancelled: number };
  status_url: string;
  results_url: string;
  /** An unfinished job's pace in words (`progress-text.ts` on the server); null once it ended. */
  progress_text: string | null;
}

/** An answer read: its status and its JSON body, or null when it had none. */
interface Answer {
  status: number;
  body: unknown;
}

/** How often an unfinished job is asked for its counts. */
const POLL_MS = 1500;
/** What the server takes for a job: images (by type or, for HEIC that browsers do not name, by extension) and zips of them. */
const IMAGE_TYPE = /^image\//;
const TAKEN_EXTENSION = /\.(jpe?g|png|webp|gif|tiff?|avif|heic|heif|zip)$/i;
const ZIP_TYPE = /^application\/(x-)?zip(-compressed)?$/;

const plural = (count: number, one: string, many: string) => count + ' ' + (count === 1 ? one : many);

/** A file of a folder that the job should take: an image or a zip, and nothing hidden (`.DS_Store`, `__MACOSX/`). */
function isTaken(chosen: ChosenFile): boolean {
  if (chosen.path.split('/').some((part) => part.startsWith('.') || part === '__MACOSX')) return false;
  return IMAGE_TYPE.test(chosen.file.type) || ZIP_TYPE.test(chosen.file.type) || TAKEN_EXTENSION.test(chosen.file.name);
}

/** Every file under a dropped entry, a folder read to its end (the browser hands its entries out a hundred at a time). */
async function filesOfEntry(entry: FileSystemEntry, folder: string): Promise<ChosenFile[]> {
  if (entry.isFile) {
    const file = await new Promise<File | null>((resolve) => (entry as FileSystemFileEntry).file(resolve, () => resolve(null)));
    return file ? [{ file, path: folder + file.name }] : [];
  }
  const reader = (entry as FileSystemDirectoryEntry).createReader();
  const found: ChosenFile[] = [];
  for (;;) {
    const entries = await new Promise<FileSystemEntry[]>((resolve) => reader.readEntries(resolve, () => resolve([])));
    if (entries.length === 0) return found;
    for (const child of entries) found.push(...(await filesOfEntry(child, folder + entry.name + '/')));
  }
}

/** What a drop holds: its files, and the files of its folders. The entries are taken before the first await, while the drop's data lasts. */
async function filesOfDrop(data: DataTransfer): Promise<ChosenFile[]> {
  const entries: (FileSystemEntry | File)[] = [];
  for (const item of Array.from(data.items)) {
    if (item.kind !== 'file') continue;
    const entry = item.webkitGetAsEntry?.();
    const file = entry ? null : item.getAsFile();
    if (entry) entries.push(entry);
    else if (file) entries.push(file);
  }
  const found: ChosenFile[] = [];
  for (const entry of entries) {
    if (entry instanceof File) found.push({ file: entry, path: entry.name });
    else found.push(...(await filesOfEntry(entry, '')));
  }
  return found;
}

/** A size for people: 1.2 MB. */
function sizeText(bytes: number): string {
  if (bytes < 1000) return bytes + ' bytes';
  if (bytes < 1e6) return (bytes / 1e3).toFixed(1) + ' kB';
  if (bytes < 1e9) return (bytes / 1e6).toFixed(1) + ' MB';
  return (bytes / 1e9).toFixed(2) + ' GB';
}

/** "2 cut, 1 failed" (and how many were cancelled). */
function outcomeText(job: BatchJobView): string {
  const { succeeded, failed, cancelled } = job.counts;
  return succeeded + ' cut, ' + failed + ' failed' + (cancelled ? ', ' + cancelled + ' cancelled' : '');
}

/** "3 of 12 done: 2 cut, 1 failed", as the server writes it in `views/batch-page.ts`. */
function countsText(job: BatchJobView): string {
  return job.counts.succeeded + job.counts.failed + ' of ' + job.counts.total + ' done: ' + outcomeText(job);
}

/**
 * The id a pasted URL's result is named after in the zip, as an uploaded file's is: the last
 * part of its path without the extension (`…/shoes/sku-1.jpg` → `sku-1`), or none.
 */
function idOfUrl(line: string): string | undefined {
  let path = line;
  try {
    path = new URL(line).pathname;
  } catch {
    // not a URL: the server says so for this image
  }
  let name = path.slice(path.lastIndexOf('/') + 1);
  try {
    name = decodeURIComponent(name);
  } catch {
    // kept as it is
  }
  name = name.replace(/\.[^.]*$/, '').slice(0, 200);
  return name || undefined;
}

const isOpen = (status: string | undefined) => status === 'queued' || status === 'running';

/**
 * Sends a body with XMLHttpRequest, whose upload reports its progress (fetch's does not), and
 * answers the status and the JSON the server sent back.
 */
function sendWithProgress(url: string, body: FormData, csrf: string, onProgress: (fraction: number) => void): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open('POST', url);
    request.setRequestHeader('x-csrf-token', csrf);
    request.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    });
    request.addEventListener('load', () => {
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(request.responseText);
      } catch {
        // not JSON: the status says enough
      }
      resolve({ status: request.status, body: parsed });
    });
    request.addEventListener('error', () => reject(new Error('the connection was lost')));
    request.addEventListener('abort', () => reject(new Error('the upload was stopped')));
    request.send(body);
  });
}

/** The Batch page: its form makes one job, and its list follows every job that has not ended. */
function batch(form: HTMLFormElement): void {
  const drop = byId('batch-drop', HTMLElement);
  const filesInput = byId('batch-files', HTMLInputElement);
  const folderInput = byId('batch-folder', HTMLInputElement);
  const chosenBox = byId('batch-chosen', HTMLElement);
  const chosenText = byId('batch-chosen-text', HTMLElement);
  const clear = byId('batch-clear', HTMLButtonElement);
  const urls = byId('batch-urls', HTMLTextAreaElement);
  const token = byId('batch-token', HTMLSelectElement);
  const submit = byId('batch-submit', HTMLButtonElement);
  const upload = byId('batch-upload', HTMLProgressElement);
  const status = byId('batch-status', HTMLElement);
  const error = byId('batch-error', HTMLElement);
  const list = byId('batch-jobs', HTMLUListElement);
  const none = byId('batch-none', HTMLElement);
  const template = byId('batch-job-template', HTMLTemplateElement);
  const csrf = pageCsrfToken();
  let chosen: ChosenFile[] = [];
  let polling = false;

  function showError(text: string): void {
    error.hidden = false;
    error.textContent = text;
  }

  function showChosen(): void {
    chosenBox.hidden = chosen.length === 0;
    const bytes = chosen.reduce((sum, one) => sum + one.file.size, 0);
    const names = chosen.slice(0, 3).map((one) => one.path).join(', ') + (chosen.length > 3 ? ', …' : '');
    chosenText.textContent = plural(chosen.length, 'file', 'files') + ' chosen, ' + sizeText(bytes) + ': ' + names;
  }

  /** Adds files to the job, leaving out what it would not take, and says what was left out. */
  function choose(found: ChosenFile[]): void {
    error.hidden = true;
    const taken = found.filter(isTaken);
    chosen = chosen.concat(taken);
    showChosen();
    const skipped = found.length - taken.length;
    status.textContent = plural(chosen.length, 'file', 'files') + ' chosen' + (skipped ? '; ' + plural(skipped, 'file was', 'files were') + ' left out, not being images or zips.' : '.');
  }

  const pathOf = (file: File) => file.webkitRelativePath || file.name;
  for (const input of [filesInput, folderInput]) {
    input.addEventListener('change', () => {
      choose(Array.from(input.files ?? [], (file) => ({ file, path: pathOf(file) })));
      input.value = '';
    });
  }
  clear.addEventListener('click', () => {
    chosen = [];
    showChosen();
    status.textContent = 'No file chosen.';
    filesInput.focus();
  });
  for (const name of ['dragenter', 'dragover'] as const) {
    drop.addEventListener(name, (event) => {
      event.preventDefault();
      drop.classList.add('over');
    });
  }
  for (const name of ['dragleave', 'drop'] as const) drop.addEventListener(name, () => drop.classList.remove('over'));
  drop.addEventListener('drop', (event) => {
    event.preventDefault();
    if (event.dataTransfer) void filesOfDrop(event.dataTransfer).then(choose);
  });

  /** Shows a job's state in its row of the list. */
  function showJob(row: HTMLElement, job: BatchJobView): void {
    const finished = job.counts.succeeded + job.counts.failed;
    const open = isOpen(job.status);
    row.dataset.job = job.id;
    row.dataset.url = job.status_url;
    row.dataset.status = job.status;
    row.querySelector('.job-size')!.textContent = plural(job.counts.total, 'image', 'images');
    const badge = row.querySelector('.job-status')!;
    badge.textContent = job.status;
    badge.className = 'badge job-status ' + job.status;
    const progress = row.querySelector('progress')!;
    progress.max = Math.max(job.counts.total, 1);
    progress.value = finished;
    progress.setAttribute('aria-label', 'Progress of job ' + job.id);
    row.querySelector('.job-counts')!.textContent = countsText(job);
    row.querySelector('.job-pace')!.textContent = job.progress_text ?? '';
    const download = row.querySelector<HTMLAnchorElement>('.job-download')!;
    download.href = job.results_url;
    download.hidden = job.counts.succeeded === 0;
    download.textContent = open ? 'Download the finished' : 'Download zip';
    const cancel = row.querySelector<HTMLFormElement>('.job-cancel')!;
    cancel.action = job.status_url + '/cancel';
    cancel.hidden = !open;
    row.querySelector('.job-id')!.textContent = job.id;
  }

  /** Asks every unfinished job of the list for its counts, until none is left unfinished. */
  async function poll(): Promise<void> {
    const rows = Array.from(list.querySelectorAll<HTMLElement>('li.job')).filter((row) => isOpen(row.dataset.status));
    if (rows.length === 0) {
      polling = false;
      return;
    }
    for (const row of rows) {
      try {
        const response = await fetch(row.dataset.url ?? '', { credentials: 'same-origin', cache: 'no-store' });
        if (response.status === 404) row.dataset.status = 'gone';
        if (!response.ok) continue;
        const job = (await response.json()) as BatchJobView;
        const was = row.dataset.status;
        showJob(row, job);
        if (!isOpen(job.status) && was !== job.status) status.textContent = 'Job ' + job.id + ' is ' + job.status + ': ' + outcomeText(job) + '.';
      } catch {
        // The server is away for a moment: ask again next round.
      }
    }
    setTimeout(() => void poll(), POLL_MS);
  }

  function follow(): void {
    if (polling) return;
    polling = true;
    setTimeout(() => void poll(), POLL_MS);
  }

  /** Sends the chosen files, or else the URLs, as one job; answers the server's answer. */
  async function sendJob(lines: string[]): Promise<Answer> {
    const query = '?token=' + encodeURIComponent(token.value);
    const options = optionControlValues(form);
    if (chosen.length) {
      const body = new FormData();
      for (const [name, value] of options) body.append(name, value);
      for (const one of chosen) body.append('files', one.file, one.path);
      upload.hidden = false;
      upload.value = 0;
      const total = sizeText(chosen.reduce((sum, one) => sum + one.file.size, 0));
      let shown = -1;
      return sendWithProgress('/dashboard/batch/jobs/multipart' + query, body, csrf, (fraction) => {
        const percent = Math.floor(fraction * 100);
        upload.value = percent;
        // The live region says each tenth, not every event.
        if (Math.floor(percent / 10) !== shown) {
          shown = Math.floor(percent / 10);
          status.textContent = 'Uploading ' + total + ': ' + percent + ' %';
        }
      });
    }
    status.textContent = 'Sending ' + plural(lines.length, 'URL', 'URLs') + '…';
    const response = await fetch('/dashboard/batch/jobs' + query, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify({ ...Object.fromEntries(options), images: lines.map((line) => ({ image_url: line, id: idOfUrl(line) })) }),
    });
    let body: unknown = null;
    try {
      body = await response.json();
    } catch {
      // not JSON
    }
    return { status: response.status, body };
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    const lines = urls.value.split('\n').map((line) => line.trim()).filter(Boolean);
    if (chosen.length && lines.length) return showError('A job holds either files or URLs: clear the files, or the URLs, and start it again.');
    if (!chosen.length && !lines.length) return showError('Choose or drop images (or a folder, or a zip), or paste image URLs, first.');
    // Caught here to point at the line; the server would take it and fail that one image.
    const wrong = lines.findIndex((line) => !/^https?:\/\/\S+$/i.test(line));
    if (wrong >= 0) return showError('“' + lines[wrong].slice(0, 80) + '” is not an http(s) URL: put one URL on each line.');
    submit.disabled = true;
    form.setAttribute('aria-busy', 'true');
    try {
      const answer = await sendJob(lines);
      if (answer.status !== 202) {
        status.textContent = '';
        showError(problemText(answer.body) ?? 'The server answered ' + answer.status + '.');
        return;
      }
      const job = answer.body as BatchJobView;
      const row = template.content.firstElementChild!.cloneNode(true) as HTMLElement;
      row.querySelector('.job-token')!.textContent = token.selectedOptions[0]?.textContent?.replace(/ \(.*\)$/, '') ?? '';
      row.querySelector('.job-created')!.textContent = 'just now';
      showJob(row, job);
      list.prepend(row);
      none.hidden = true;
      status.textContent = 'Job started: ' + plural(job.counts.total, 'image', 'images') + '. Its progress is under Recent jobs.';
      chosen = [];
      showChosen();
      urls.value = '';
      follow();
    } catch (e) {
      status.textContent = '';
      showError('The job was not sent: ' + failureText(e) + '.');
    } finally {
      submit.disabled = false;
      upload.hidden = true;
      form.removeAttribute('aria-busy');
    }
  });

  follow();
}

const batchForm = document.getElementById('batch');
if (batchForm instanceof HTMLFormElement) batch(batchForm);
