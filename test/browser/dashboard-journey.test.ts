import { readFile } from 'node:fs/promises';
import type { BrowserContext, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrowserSession, type BrowserSession } from '../helpers/browser-session.js';
import { alphaAt, makePhoto } from '../helpers/images.js';
import { haveChromium, saveScreenshot, type PageWatch, type ScreenshotDir } from './chromium.js';
import type { DashboardApp } from './dashboard-app.js';

/**
 * The owner's whole journey through the dashboard in a real browser (Debian's Chromium,
 * driven by playwright-core): first-run setup → sign in → create a token → copy it →
 * exchange it through the API → remove a background on the try-it page → revoke → the
 * managed token is refused. Each step leaves a screenshot (800 px wide) in
 * CUTOUT_SCREENSHOT_DIR (default: a temporary directory, removed after); README.md and docs/dashboard.md show
 * `03-token-created.png` and `04-try-it.png` from `docs/screenshots`.
 */

const PASSWORD = 'a long enough password';
const EMAIL = 'owner@example.com';

describe.skipIf(!haveChromium)('dashboard in a browser', () => {
  let session: BrowserSession;
  let t: DashboardApp;
  let origin: string;
  let context: BrowserContext;
  let page: Page;
  let shots: ScreenshotDir;
  let watch: PageWatch;

  /** Saves what the page shows now as `<n>-<name>.png`, 800 px wide, palette PNG. */
  const screenshot = (name: string, fullPage = true) => saveScreenshot(page, shots, name, fullPage);

  beforeAll(async () => {
    session = await startBrowserSession({
      config: { rateLimit: 0 },
      context: { viewport: { width: 1000, height: 760 }, acceptDownloads: true },
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    ({ t, origin, context, page, watch, shots } = session);
  });

  afterAll(() => session?.close());

  let tokenId: string;
  let managedToken: string;

  it('first run: the setup page, protected by the code from the log', async () => {
    await page.goto(`${origin}/dashboard`);
    expect(page.url()).toBe(`${origin}/dashboard/setup`);
    await expect(page.title()).resolves.toBe('Set up · Cutout');
    await page.getByLabel('Setup code').fill(t.setupCode()!);
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password', { exact: false }).first().fill(PASSWORD);
    await page.getByLabel('Password again').fill(PASSWORD);
    await screenshot('01-setup');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(`${origin}/dashboard/tokens`);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Tokens');
  });

  it('signs out and back in, by keyboard alone', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${origin}/dashboard/sign-in?signed-out`);
    await expect(page.getByRole('status').textContent()).resolves.toContain('You have signed out.');
    // The email field has focus on arrival; Tab moves to the password, Enter submits.
    await page.keyboard.type(EMAIL);
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await screenshot('02-sign-in');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${origin}/dashboard/tokens`);
  });

  it('creates a token: the Token ID is shown once and the copy button copies it', async () => {
    await page.getByLabel('Name').fill('laptop');
    await page.getByRole('button', { name: 'Create token' }).click();
    const shown = page.locator('#new-token-id');
    tokenId = (await shown.textContent())!.trim();
    expect(tokenId).toMatch(/^cut_user_[A-Za-z0-9_-]{43}$/);

    await page.getByRole('button', { name: 'Copy' }).first().click();
    await page.waitForFunction(() => document.getElementById('copied-token')?.textContent === 'Copied');
    await expect(page.locator('[data-copy="new-token-id"]').textContent()).resolves.toBe('Copied ✓');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(tokenId);
    await expect(page.locator('#exchange-command').textContent()).resolves.toBe(`curl -s -X POST ${origin}/api/v1/auth/token -H "token: ${tokenId}"`);
    await screenshot('03-token-created');

    // Afterwards, only the prefix.
    await page.getByRole('link', { name: 'Tokens' }).click();
    const html = await page.content();
    expect(html).not.toContain(tokenId);
    await expect(page.locator('tr[data-token-name="laptop"] code').textContent()).resolves.toBe(`${tokenId.slice(0, 15)}…`);
  });

  it('the copied Token ID exchanges through the API, and the managed token removes a background', async () => {
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    const exchange = await fetch(`${origin}/api/v1/auth/token`, { method: 'POST', headers: { token: copied } });
    expect(exchange.status).toBe(200);
    managedToken = ((await exchange.json()) as { managed_token: string }).managed_token;
    const photo = await makePhoto('jpeg', 320, 240);
    const removal = await fetch(`${origin}/api/v1/background/remove/base64`, {
      method: 'POST',
      headers: { authorization: managedToken, 'content-type': 'application/json' },
      body: JSON.stringify({ image_base64: photo.toString('base64') }),
    });
    expect(removal.status).toBe(200);
    // The session cookie the browser holds is no credential for the API.
    const cookies = (await context.cookies(origin)).map((c) => `${c.name}=${c.value}`).join('; ');
    const withCookie = await fetch(`${origin}/api/v1/background/remove/base64`, {
      method: 'POST',
      headers: { cookie: cookies, 'content-type': 'application/json' },
      body: JSON.stringify({ image_base64: photo.toString('base64') }),
    });
    expect(withCookie.status).toBe(401);
  });

  it('try-it: choose an image, see before and after, download the PNG', async () => {
    await page.getByRole('link', { name: 'Try it' }).click();
    await page.waitForURL(`${origin}/dashboard/try-it`);
    // Phones' HEIC photos are taken too, and the hint says so.
    await expect(page.locator('#drop .hint').textContent()).resolves.toMatch(/\bHEIC\b/);
    const photo = await makePhoto('jpeg', 640, 480);
    // The server's default, CUTOUT_QUALITY=auto, is the one selected, and it is what is sent.
    expect(await page.locator('#try-quality').inputValue()).toBe('auto');
    const [sent] = await Promise.all([
      page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/dashboard/try-it/remove'),
      page.locator('#try-file').setInputFiles({ name: 'ball.jpg', mimeType: 'image/jpeg', buffer: photo }),
    ]);
    expect(new URL(sent.url()).searchParams.get('quality')).toBe('auto');
    await page.locator('#compare').waitFor({ state: 'visible', timeout: 60_000 });
    await expect(page.locator('#try-status').textContent()).resolves.toMatch(/^Done in \d+\.\d s\.$/);
    // The ball is a clear subject: one look is sure enough, and the page says how many were taken.
    await expect(page.locator('#try-uncertainty').textContent()).resolves.toMatch(/^uncertainty 0\.0\d, one look$/);
    expect(await page.locator('#after').evaluate((img: HTMLImageElement) => [img.naturalWidth, img.naturalHeight])).toEqual([640, 480]);
    await screenshot('04-try-it');

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download PNG' }).click()]);
    expect(download.suggestedFilename()).toBe('ball-cutout.png');
    const png = await readFile((await download.path())!);
    expect(await sharp(png).metadata()).toMatchObject({ format: 'png', width: 640, height: 480, channels: 4 });
    expect(await alphaAt(png, 0.5, 0.5)).toBeGreaterThan(200);
    expect(await alphaAt(png, 0.03, 0.03)).toBeLessThan(50);
  });

  it('try-it with options: a JPEG on a colour, cropped to the subject, at most 200 px wide', async () => {
    await page.locator('#try-format').selectOption('jpg');
    await page.locator('#try-background').selectOption('colour');
    await page.locator('#try-colour').fill('#2050c0');
    await page.locator('#try-crop').check();
    await page.locator('#try-max-width').fill('200');
    await page.locator('#try-file').setInputFiles({ name: 'ball.jpg', mimeType: 'image/jpeg', buffer: await makePhoto('jpeg', 640, 480) });
    await page.getByRole('link', { name: 'Download JPG' }).waitFor({ state: 'visible', timeout: 60_000 });
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download JPG' }).click()]);
    expect(download.suggestedFilename()).toBe('ball-cutout.jpg');
    const jpeg = await readFile((await download.path())!);
    const meta = await sharp(jpeg).metadata();
    expect(meta.format).toBe('jpeg');
    // The ball is about 290 px across in the 640 px photo: cropped to it, then scaled to 200.
    expect(meta.width).toBe(200);
    expect(Math.abs(meta.height! - 200)).toBeLessThanOrEqual(4);
    const { data } = await sharp(jpeg).raw().toBuffer({ resolveWithObject: true });
    // A corner of the crop is outside the ball: the chosen colour.
    expect(Math.abs(data[0] - 0x20) + Math.abs(data[1] - 0x50) + Math.abs(data[2] - 0xc0)).toBeLessThan(24);
    // Back to the defaults for the steps that follow.
    await page.locator('#try-format').selectOption('png');
    await page.locator('#try-background').selectOption('transparent');
    await page.locator('#try-crop').uncheck();
    await page.locator('#try-max-width').fill('');
  });

  it("try-it's finishing steps: the subject at 25 % at the top, with a shadow, sent as the API's options", async () => {
    const photo = await makePhoto('jpeg', 640, 480);
    /** Chooses the photo, waits for its answer, and returns the request's options and the PNG downloaded. */
    const cut = async (): Promise<{ query: URLSearchParams; png: Buffer }> => {
      const [sent] = await Promise.all([
        page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/dashboard/try-it/remove'),
        page.locator('#try-file').setInputFiles({ name: 'ball.jpg', mimeType: 'image/jpeg', buffer: photo }),
      ]);
      await page.waitForFunction(() => /^Done in /.test(document.getElementById('try-status')?.textContent ?? ''), undefined, { timeout: 60_000 });
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download PNG' }).click()]);
      return { query: new URL(sent.url()).searchParams, png: await readFile((await download.path())!) };
    };
    // Chosen by their labels, as a screen reader names them; reached by Tab after the width,
    // in the order they are shown, and the shadow ticked with the space bar.
    await page.getByLabel("Subject's size").selectOption('25%');
    await page.getByLabel("Subject's place").selectOption({ label: 'Top' });
    await page.locator('#try-max-width').focus();
    const tabbed: (string | undefined)[] = [];
    for (let i = 0; i < 3; i++) {
      await page.keyboard.press('Tab');
      tabbed.push(await page.evaluate(() => document.activeElement?.id));
    }
    expect(tabbed).toEqual(['try-scale', 'try-position', 'try-shadow']);
    await page.keyboard.press('Space');
    expect(await page.getByLabel('Shadow under the subject').isChecked()).toBe(true);
    const shadowed = await cut();
    expect(Object.fromEntries(shadowed.query)).toMatchObject({ scale: '25%', position: '50% 0%', add_shadow: 'true' });
    expect(await sharp(shadowed.png).metadata()).toMatchObject({ width: 640, height: 480, channels: 4 });
    // The canvas keeps its size; the ball, a quarter of its height now, stands at its top.
    expect(await alphaAt(shadowed.png, 0.5, 0.5)).toBeLessThan(50);
    expect(await alphaAt(shadowed.png, 0.5, 0.12)).toBeGreaterThan(200);
    await screenshot('04b-try-it-finishing');

    // The same without the shadow: the shadowed answer is the same cut with dark pixels under it.
    await page.getByLabel('Shadow under the subject').uncheck();
    const plain = await cut();
    expect(plain.query.has('add_shadow')).toBe(false);
    const a = await sharp(shadowed.png).raw().toBuffer();
    const b = await sharp(plain.png).raw().toBuffer();
    let shadowOnly = 0;
    let lighter = 0;
    let notDark = 0;
    for (let i = 0; i < a.length; i += 4) {
      if (a[i + 3] < b[i + 3] - 1) lighter++;
      if (b[i + 3] === 0 && a[i + 3] > 10) {
        shadowOnly++;
        if (Math.max(a[i], a[i + 1], a[i + 2]) >= 40) notDark++;
      }
    }
    expect({ lighter, notDark }).toEqual({ lighter: 0, notDark: 0 });
    expect(shadowOnly).toBeGreaterThan(100);

    // Back to the defaults, which send none of these options.
    await page.getByLabel("Subject's size").selectOption('original');
    await page.getByLabel("Subject's place").selectOption('');
  });

  it('try-it\'s More options: every option of the API\'s table without its own control, sent by its name', async () => {
    await page.locator('#try-more summary').click();
    // The background blur, typed in its field: the photo's own background, softened.
    await page.getByLabel('bg_blur').fill('12');
    const [sent] = await Promise.all([
      page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/dashboard/try-it/remove'),
      page.locator('#try-file').setInputFiles({ name: 'ball.jpg', mimeType: 'image/jpeg', buffer: await makePhoto('jpeg', 640, 480) }),
    ]);
    expect(new URL(sent.url()).searchParams.get('bg_blur')).toBe('12');
    await page.waitForFunction(() => /^Done in /.test(document.getElementById('try-status')?.textContent ?? ''), undefined, { timeout: 60_000 });
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download PNG' }).click()]);
    // Over the photo's own background there is no transparency left.
    expect(await sharp(await readFile((await download.path())!)).metadata()).toMatchObject({ width: 640, height: 480, channels: 3 });
    await page.getByLabel('bg_blur').fill('');
    await page.locator('#try-more summary').click();
  });

  it("try-it takes a dropped file, and shows the API's own message for one it refuses", async () => {
    // The file input is reachable by keyboard (it sits inside the drop zone's label).
    await page.locator('body').focus();
    for (let i = 0; i < 20 && (await page.evaluate(() => document.activeElement?.id)) !== 'try-file'; i++) await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('try-file');
    // Drop a text file on the drop zone, as a person dragging it from their desktop would.
    await page.locator('#drop').evaluate((zone) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File(['not an image at all'], 'notes.txt', { type: 'text/plain' }));
      zone.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
    });
    const alert = page.getByRole('alert');
    await alert.waitFor({ state: 'visible' });
    await expect(alert.textContent()).resolves.toMatch(/^Unsupported image format: /);
    expect(await page.locator('#compare').isHidden()).toBe(true);
  });

  it('usage: the removal is counted, per day and per token', async () => {
    await page.getByRole('link', { name: 'Usage' }).click();
    await expect(page.locator('#stat-removals').textContent()).resolves.toBe('1');
    await expect(page.locator('#stat-error-rate').textContent()).resolves.toBe('0.0 %');
    await expect(page.getByRole('img', { name: /^Removals per day from/ }).count()).resolves.toBe(1);
    await expect(page.getByRole('img', { name: 'Removals per day of laptop' }).count()).resolves.toBe(1);
    await screenshot('05-usage');
  });

  it('reads well at phone width, without sideways scrolling', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const path of ['/dashboard/tokens', '/dashboard/usage', '/dashboard/try-it']) {
      await page.goto(`${origin}${path}`);
      const [scrollWidth, innerWidth] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
      expect(scrollWidth, path).toBeLessThanOrEqual(innerWidth);
    }
    await screenshot('06-phone-try-it');
    await page.goto(`${origin}/dashboard/tokens`);
    await screenshot('06-phone-tokens');
    await page.setViewportSize({ width: 1000, height: 760 });
  });

  it('revokes with a confirmation; the managed token is refused at once', async () => {
    await page.goto(`${origin}/dashboard/tokens`);
    await page.getByRole('link', { name: 'Revoke laptop' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Revoke “laptop”?');
    await screenshot('07-revoke-confirm');
    await page.getByRole('button', { name: 'Revoke token' }).click();
    await page.waitForURL(/\/dashboard\/tokens\?revoked=/);
    await expect(page.getByRole('status').first().textContent()).resolves.toContain('Revoked “laptop”');
    await expect(page.locator('tr[data-token-name="laptop"] .badge').textContent()).resolves.toBe('revoked');
    await screenshot('08-revoked');

    const photo = await makePhoto('jpeg', 64, 48);
    const refused = await fetch(`${origin}/api/v1/background/remove/base64`, {
      method: 'POST',
      headers: { authorization: managedToken, 'content-type': 'application/json' },
      body: JSON.stringify({ image_base64: photo.toString('base64') }),
    });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { code: string }).code).toBe('revoked_token');
  });

  it('loaded nothing from outside the server, and the pages logged no script error', () => {
    expect(watch.foreignRequests).toEqual([]);
    // The one console error expected: the browser reporting the try-it endpoint's 415.
    expect(watch.pageErrors.filter((text) => !/status of 415/.test(text))).toEqual([]);
  });
});
