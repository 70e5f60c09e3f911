import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { unzipSync } from 'fflate';
import type { Download, Locator, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelService } from '../../src/model/model-service.js';
import { startBrowserSession, type BrowserSession } from '../helpers/browser-session.js';
import { makePhoto } from '../helpers/images.js';
import { squareSegmenter } from '../helpers/square-segmenter.js';
import { haveChromium, saveScreenshot } from './chromium.js';

/**
 * The dashboard's Batch page in a real browser: files chosen and dropped, or URLs pasted, go
 * as one job through the dashboard's job endpoints; the page follows it to the end, the zip
 * it downloads holds the results, and everything works by keyboard and at phone width. A
 * tiny model (16×16, a square mask) keeps the runs quick: what is tested is the page, not the
 * cut. Leaves `11-batch.png` and `12-phone-batch.png` in CUTOUT_SCREENSHOT_DIR.
 */

const PASSWORD = 'a long enough password';
const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47];
const WEBP_MAGIC = 'WEBP';

/** The images of a zip downloaded by the page, by name. */
async function zipOf(download: Download): Promise<Record<string, Uint8Array>> {
  return unzipSync(new Uint8Array(await readFile((await download.path())!)));
}

/** Presses Tab until `target` has focus, and fails after `most` presses: what a keyboard user does to reach it. */
async function tabTo(page: Page, target: Locator, most = 60): Promise<void> {
  for (let presses = 0; presses < most; presses++) {
    if (await target.evaluate((element) => element === document.activeElement)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`Tab never reached ${String(target)}`);
}

describe.skipIf(!haveChromium)('the Batch page', { timeout: 120_000 }, () => {
  let session: BrowserSession;
  let page: Page;
  let origin: string;
  let photos: Server;
  let photoBase: string;
  /** Answers to `/slow/…` held back until the test lets them go: an image that waits. */
  const slow: ServerResponse[] = [];
  const letSlowGo = () => {
    for (const response of slow.splice(0)) response.writeHead(200, { 'content-type': 'image/png' }).end(png);
  };
  let png: Buffer;
  let jpeg: Buffer;

  beforeAll(async () => {
    png = await makePhoto('png', 48, 36);
    jpeg = await makePhoto('jpeg', 40, 30);
    photos = createServer((request, response) => {
      if (request.url?.startsWith('/photo/')) return response.writeHead(200, { 'content-type': 'image/png' }).end(png);
      if (request.url?.startsWith('/slow/')) return void slow.push(response);
      response.writeHead(404).end('no');
    });
    await new Promise<void>((resolve) => photos.listen(0, '127.0.0.1', resolve));
    photoBase = `http://127.0.0.1:${(photos.address() as AddressInfo).port}`;

    session = await startBrowserSession({
      config: { rateLimit: 0, urlAllowPrivate: true },
      model: ModelService.ofSegmenter(squareSegmenter()),
      context: { viewport: { width: 1100, height: 900 }, acceptDownloads: true },
    });
    ({ page, origin } = session);
    // Playwright asks the browser to intercept file choosers when the page's first
    // 'filechooser' listener is added, without waiting for the answer: a listener added in the
    // test itself raced the key press that opens the chooser (and lost in one CI run, the
    // chooser never seen). Listening from here on, the interception is long in place.
    page.on('filechooser', () => {});
    await page.goto(`${origin}/dashboard`);
    await page.getByLabel('Setup code').fill(session.t.setupCode()!);
    await page.getByLabel('Email').fill('owner@example.com');
    await page.getByLabel('Password', { exact: false }).first().fill(PASSWORD);
    await page.getByLabel('Password again').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(`${origin}/dashboard/tokens`);
    await page.getByLabel('Name').fill('catalogue');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.locator('#new-token-id').waitFor();
  });

  afterAll(async () => {
    letSlowGo();
    await session?.close();
    photos?.close();
  });

  /** The row of the newest job, once the page has added it. */
  const newestJob = () => page.locator('#batch-jobs li.job').first();

  /** Waits until the row's job has ended, as the page shows it. */
  async function expectEnded(row: Locator, status: 'done' | 'cancelled'): Promise<void> {
    await expect.poll(() => row.getAttribute('data-status'), { timeout: 30_000 }).toBe(status);
  }

  it('is in the navigation, and says what it needs', async () => {
    await page.goto(`${origin}/dashboard/tokens`);
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Batch' }).click();
    await page.waitForURL(`${origin}/dashboard/batch`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Batch');
    await expect(page.locator('[aria-current="page"]').textContent()).resolves.toBe('Batch');
    await expect(page.getByLabel('Token').locator('option').allTextContents()).resolves.toEqual([expect.stringMatching(/^catalogue \(cut_user_/)]);
    await expect(page.locator('#batch-none').isVisible()).resolves.toBe(true);
    expect(session.watch.pageErrors).toEqual([]);
  });

  it('makes one job of a file chosen and a file dropped, follows it to the end, and downloads a zip of both results', async () => {
    await page.goto(`${origin}/dashboard/batch`);
    await page.locator('#batch-files').setInputFiles({ name: 'left.png', mimeType: 'image/png', buffer: png });
    // A drop as the browser makes it: a DataTransfer of files (a folder's entries are read the same way).
    await page.locator('#batch-drop').evaluate((zone, bytes) => {
      const data = new DataTransfer();
      data.items.add(new File([new Uint8Array(bytes)], 'right.jpg', { type: 'image/jpeg' }));
      data.items.add(new File(['not an image'], '.DS_Store', { type: '' }));
      zone.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    }, [...jpeg]);
    await expect.poll(() => page.locator('#batch-chosen-text').textContent()).toMatch(/^2 files chosen, .*: left\.png, right\.jpg$/);
    await expect(page.locator('#batch-status').textContent()).resolves.toContain('1 file was left out');

    const [made] = await Promise.all([page.waitForResponse((r) => r.url().startsWith(`${origin}/dashboard/batch/jobs/multipart?token=`)), page.getByRole('button', { name: 'Start the job' }).click()]);
    expect(made.status()).toBe(202);
    const job = (await made.json()) as { id: string; counts: { total: number } };
    expect(job.counts.total).toBe(2);
    const row = newestJob();
    await expect(row.getAttribute('data-job')).resolves.toBe(job.id);
    await expectEnded(row, 'done');
    const progress = row.getByRole('progressbar');
    await expect(progress.evaluate((bar: HTMLProgressElement) => [bar.value, bar.max])).resolves.toEqual([2, 2]);
    await expect(row.locator('.job-counts').textContent()).resolves.toBe('2 of 2 done: 2 cut, 0 failed');
    await expect(page.getByRole('status').filter({ hasText: job.id }).textContent()).resolves.toBe(`Job ${job.id} is done: 2 cut, 0 failed.`);
    await expect(page.locator('#batch-chosen').isHidden()).resolves.toBe(true);

    const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('link', { name: 'Download zip' }).click()]);
    const files = await zipOf(download);
    expect(Object.keys(files).sort()).toEqual(['left.png', 'right.png']);
    for (const [name, size] of [['left.png', [48, 36]], ['right.png', [40, 30]]] as const) {
      expect([...files[name].subarray(0, 4)]).toEqual(PNG_MAGIC);
      const { width, height, channels } = await sharp(files[name]).metadata();
      expect([width, height, channels]).toEqual([...size, 4]);
    }
    expect(session.watch.pageErrors).toEqual([]);
    expect(session.watch.foreignRequests).toEqual([]);
  });

  it('makes a job of pasted URLs with the options chosen, and lists it after a reload', async () => {
    await page.goto(`${origin}/dashboard/batch`);
    await page.getByLabel('Or image URLs, one per line').fill(`${photoBase}/photo/sku-1.png\n\n  ${photoBase}/photo/sku-2.png  \n`);
    await page.getByLabel('Format').selectOption('webp');
    await page.locator('#batch-more summary').click();
    await page.locator('#batch-option-crop').selectOption('true');
    const [made] = await Promise.all([page.waitForRequest((r) => r.url().startsWith(`${origin}/dashboard/batch/jobs?token=`)), page.getByRole('button', { name: 'Start the job' }).click()]);
    expect(made.postDataJSON()).toEqual({ format: 'webp', crop: 'true', images: [
        { image_url: `${photoBase}/photo/sku-1.png`, id: 'sku-1' },
        { image_url: `${photoBase}/photo/sku-2.png`, id: 'sku-2' },
      ],
    });
    const row = newestJob();
    await expectEnded(row, 'done');
    const id = (await row.getAttribute('data-job'))!;
    const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('link', { name: 'Download zip' }).click()]);
    const files = await zipOf(download);
    // Each result is named after its URL's file, as an uploaded file's is.
    expect(Object.keys(files).sort()).toEqual(['sku-1.webp', 'sku-2.webp']);
    for (const bytes of Object.values(files)) expect(Buffer.from(bytes.subarray(8, 12)).toString('latin1')).toBe(WEBP_MAGIC);

    await page.reload();
    const listed = page.locator(`#batch-jobs li.job[data-job="${id}"]`);
    await expect(listed.getAttribute('data-status')).resolves.toBe('done');
    await expect(listed.locator('.job-counts').textContent()).resolves.toBe('2 of 2 done: 2 cut, 0 failed');
    await expect(listed.locator('.job-token').textContent()).resolves.toBe('catalogue');
    await expect(listed.locator('time').getAttribute('datetime')).resolves.toMatch(/^\d{4}-\d\d-\d\dT/);
    await expect(listed.getByRole('link', { name: 'Download zip' }).getAttribute('href')).resolves.toBe(`/dashboard/batch/jobs/${id}/results`);
    await expect(listed.getByRole('button', { name: 'Cancel' }).isHidden()).resolves.toBe(true);
    await expect(page.locator('#batch-jobs li.job').count()).resolves.toBe(2);
  });

  it('takes a folder chosen with "Choose a folder", its subfolders too, and leaves out what is not an image', async () => {
    const root = await mkdtemp(join(tmpdir(), 'cutout-batch-folder-'));
    try {
      const folder = join(root, 'shoot');
      await mkdir(join(folder, 'backs'), { recursive: true });
      await writeFile(join(folder, 'front.png'), png);
      await writeFile(join(folder, 'backs', 'back.jpg'), jpeg);
      await writeFile(join(folder, '.DS_Store'), 'x');
      await writeFile(join(folder, 'notes.txt'), 'not an image');
      await page.goto(`${origin}/dashboard/batch`);
      await page.locator('#batch-folder').setInputFiles(folder);
      await expect.poll(() => page.locator('#batch-chosen-text').textContent()).toMatch(/^2 files chosen, .*: shoot\/(backs\/back\.jpg, shoot\/front\.png|front\.png, shoot\/backs\/back\.jpg)$/);
      await expect(page.locator('#batch-status').textContent()).resolves.toContain('2 files were left out');
      await page.getByRole('button', { name: 'Clear the files' }).click();
      await expect(page.locator('#batch-chosen').isHidden()).resolves.toBe(true);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("shows the API's problem detail when the job is refused, and asks for files or URLs first", async () => {
    await page.goto(`${origin}/dashboard/batch`);
    await page.getByRole('button', { name: 'Start the job' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Choose or drop images');

    await page.getByLabel('Or image URLs, one per line').fill(`${photoBase}/photo/a.png\nshop.example/b.png`);
    await page.getByRole('button', { name: 'Start the job' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toBe('“shop.example/b.png” is not an http(s) URL: put one URL on each line.');

    await page.getByLabel('Or image URLs, one per line').fill(`${photoBase}/photo/a.png`);
    await page.locator('#batch-more summary').click();
    await page.locator('#batch-option-max-width').fill('wide');
    const [answer] = await Promise.all([page.waitForResponse((r) => r.url().startsWith(`${origin}/dashboard/batch/jobs?token=`)), page.getByRole('button', { name: 'Start the job' }).click()]);
    expect(answer.status()).toBe(400);
    const problem = (await answer.json()) as { detail: string };
    expect(problem.detail).toContain('max_width');
    await expect.poll(() => page.getByRole('alert').textContent()).toContain(problem.detail);
    await expect(page.locator('#batch-jobs li.job').count()).resolves.toBe(2);
    // The browser logs the refused request; nothing else went wrong.
    expect(session.watch.pageErrors.splice(0)).toEqual(['Failed to load resource: the server responded with a status of 400 (Bad Request)']);
  });

  it('works by keyboard alone: choose files, start the job, download its zip; download half a job and cancel the rest', async () => {
    await page.goto(`${origin}/dashboard/batch`);
    await page.locator('main').focus();
    await tabTo(page, page.locator('#batch-files'));
    // Space on the focused file input opens the file chooser, as Enter does.
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.keyboard.press('Space')]);
    expect(chooser.isMultiple()).toBe(true);
    await chooser.setFiles([
      { name: 'k1.png', mimeType: 'image/png', buffer: png },
      { name: 'k2.png', mimeType: 'image/png', buffer: png },
    ]);
    await expect.poll(() => page.locator('#batch-chosen-text').textContent()).toMatch(/^2 files chosen/);
    // The folder picker, the URLs, the token, the format and More options are on the way, each focusable.
    for (const id of ['#batch-folder', '#batch-clear', '#batch-urls', '#batch-token', '#batch-format']) await tabTo(page, page.locator(id), 8);
    await tabTo(page, page.locator('#batch-more summary'), 4);
    await page.keyboard.press('Space');
    await expect(page.locator('#batch-more').getAttribute('open')).resolves.toBe('');
    await tabTo(page, page.locator('#batch-submit'));
    const [made] = await Promise.all([page.waitForResponse((r) => r.url().includes('/dashboard/batch/jobs/multipart')), page.keyboard.press('Enter')]);
    expect(made.status()).toBe(202);
    const row = newestJob();
    await expectEnded(row, 'done');
    await tabTo(page, row.getByRole('link', { name: 'Download zip' }));
    const [download] = await Promise.all([page.waitForEvent('download'), page.keyboard.press('Enter')]);
    expect(Object.keys(await zipOf(download)).sort()).toEqual(['k1.png', 'k2.png']);

    // A job whose first image is cut and whose second waits (its server holds the answer back):
    // the page shows it half done, its zip holds what is finished, and Cancel, reached by
    // Tab, ends the rest.
    try {
      await page.locator('#batch-urls').focus();
      await page.keyboard.type(`${photoBase}/photo/x.png\n${photoBase}/slow/y.png`);
      await tabTo(page, page.locator('#batch-submit'));
      await page.keyboard.press('Enter');
      const half = newestJob();
      await expect.poll(() => half.locator('.job-counts').textContent(), { timeout: 30_000 }).toBe('1 of 2 done: 1 cut, 0 failed');
      await expect(half.getAttribute('data-status')).resolves.toBe('running');
      await expect(half.getByRole('progressbar').evaluate((bar: HTMLProgressElement) => [bar.value, bar.max])).resolves.toEqual([1, 2]);
      const id = await half.getAttribute('data-job');
      await tabTo(page, half.getByRole('link', { name: 'Download the finished' }));
      const [partial] = await Promise.all([page.waitForEvent('download'), page.keyboard.press('Enter')]);
      expect(Object.keys(await zipOf(partial))).toHaveLength(1);
      await tabTo(page, half.getByRole('button', { name: 'Cancel' }));
      const [answer] = await Promise.all([page.waitForResponse((r) => r.url() === `${origin}/dashboard/batch/jobs/${id}/cancel`), page.keyboard.press('Enter')]);
      expect([answer.status(), answer.headers().location]).toEqual([303, '/dashboard/batch']);
      const cancelled = page.locator(`#batch-jobs li.job[data-job="${id}"]`);
      await expect.poll(() => cancelled.getAttribute('data-status')).toBe('cancelled');
      await expect(cancelled.locator('.job-counts').textContent()).resolves.toBe('1 of 2 done: 1 cut, 0 failed, 1 cancelled');
      await expect(cancelled.getByRole('button', { name: 'Cancel' }).isHidden()).resolves.toBe(true);
      await expect(cancelled.getByRole('link', { name: 'Download zip' }).isVisible()).resolves.toBe(true);
    } finally {
      letSlowGo();
    }
    await saveScreenshot(page, session.shots, '11-batch');
    expect(session.watch.pageErrors).toEqual([]);
  });

  it('fits a phone: nothing wider than the screen, and every control on it and usable', async () => {
    const phone = await session.browser.newContext({ viewport: { width: 390, height: 844 }, storageState: await session.context.storageState(), hasTouch: true, isMobile: true });
    try {
      const small = await phone.newPage();
      await small.goto(`${origin}/dashboard/batch`);
      await small.locator('#batch-more summary').click();
      const overflow = await small.evaluate(() => document.scrollingElement!.scrollWidth - window.innerWidth);
      expect(overflow).toBeLessThanOrEqual(0);
      for (const selector of ['label.picker >> nth=0', 'label.picker >> nth=1', '#batch-urls', '#batch-token', '#batch-format', '#batch-submit', '#batch-jobs li.job >> nth=0']) {
        const box = (await small.locator(selector).boundingBox())!;
        expect(box, selector).not.toBeNull();
        expect(box.x, selector).toBeGreaterThanOrEqual(0);
        expect(box.x + box.width, selector).toBeLessThanOrEqual(390);
      }
      // A tap on the visible button starts a job of pasted URLs, as a click does.
      await small.locator('#batch-urls').fill(`${photoBase}/photo/phone.png`);
      await small.locator('#batch-submit').tap();
      await expect.poll(() => small.locator('#batch-jobs li.job').first().getAttribute('data-status'), { timeout: 30_000 }).toBe('done');
      expect(await small.evaluate(() => document.scrollingElement!.scrollWidth - window.innerWidth)).toBeLessThanOrEqual(0);
      await saveScreenshot(small, session.shots, '12-phone-batch');
    } finally {
      await phone.close();
    }
  });
});
