import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import sharp from 'sharp';

/**
 * Debian's Chromium for the browser tests, driven by playwright-core (which downloads no
 * browser of its own). Without it the tests are skipped with a notice, except under CI,
 * whose `.ci/run` installs it: there a missing browser is a failure.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  if (process.env.CI) throw new Error(`${CHROMIUM} is missing; .ci/run installs it with apt-get install chromium`);
  process.stderr.write(`\n[cutout tests] browser tests SKIPPED: no Chromium at ${CHROMIUM} (apt-get install chromium)\n\n`);
}

/**
 * Starts Chromium headless with nothing that reaches outside this machine: this sandbox
 * refuses such connections, and a test must not depend on them. Playwright gives each launch
 * a fresh, empty profile directory of its own.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}

/** What a page did that the browser tests forbid, collected while it runs. */
export interface PageWatch {
  /** Requests for anything but `origin` (its own `data:` and `blob:` URLs aside). */
  foreignRequests: string[];
  /** Errors thrown by the page's scripts or written to its console. */
  pageErrors: string[];
}

export function watchPage(page: Page, origin: string): PageWatch {
  const watch: PageWatch = { foreignRequests: [], pageErrors: [] };
  page.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(`${origin}/`) && !url.startsWith('blob:') && !url.startsWith('data:')) watch.foreignRequests.push(url);
  });
  page.on('pageerror', (error) => watch.pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') watch.pageErrors.push(message.text());
  });
  return watch;
}

/**
 * Where a browser test leaves its screenshots: CUTOUT_SCREENSHOT_DIR when set (kept, to be
 * copied into docs/screenshots), else a fresh temporary directory that `dispose` removes.
 */
export interface ScreenshotDir {
  path: string;
  dispose(): Promise<void>;
}

export async function screenshotDir(): Promise<ScreenshotDir> {
  const kept = process.env.CUTOUT_SCREENSHOT_DIR;
  const path = kept ? resolve(kept) : await mkdtemp(join(tmpdir(), 'cutout-screens-'));
  await mkdir(path, { recursive: true });
  return { path, dispose: async () => (kept ? undefined : rm(path, { recursive: true, force: true })) };
}

/** Saves what `page` shows now as `<name>.png` in `dir`, at most 800 px wide, as a palette PNG (the form docs/screenshots keeps). */
export async function saveScreenshot(page: Page, dir: ScreenshotDir, name: string, fullPage = true): Promise<void> {
  const png = await page.screenshot({ fullPage });
  const { width } = await sharp(png).metadata();
  await sharp(png)
    .resize({ width: Math.min(800, width ?? 800) })
    .png({ palette: true, quality: 90, compressionLevel: 9 })
    .toFile(join(dir.path, `${name}.png`));
}
