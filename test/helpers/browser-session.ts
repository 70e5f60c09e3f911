import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import type { Config } from '../../src/config.js';
import type { ModelService } from '../../src/model/model-service.js';
import { launchChromium, screenshotDir, watchPage, type PageWatch, type ScreenshotDir } from '../browser/chromium.js';
import { startDashboardApp, type DashboardApp } from '../browser/dashboard-app.js';

/** What a browser test drives: a listening Cutout, Chromium with one page on it, and where screenshots go. */
export interface BrowserSession {
  t: DashboardApp;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** What `page` requested from elsewhere and the errors it logged, collected from the start. */
  watch: PageWatch;
  shots: ScreenshotDir;
  /** Closes the browser and the app and removes the screenshot directory unless it is kept. */
  close(): Promise<void>;
}

export interface BrowserSessionOptions {
  /** Config for the app (startDashboardApp's overrides). */
  config?: Partial<Config>;
  /** The app's model; by default the real one. */
  model?: ModelService;
  /** The page's context: viewport, downloads, … */
  context?: BrowserContextOptions;
  /** Browser permissions granted to the app's origin (e.g. the clipboard's). */
  permissions?: string[];
}

/**
 * Starts a dashboard app on a random loopback port and opens Chromium on it: the set-up every
 * test under test/browser shares. Whatever was opened is closed again if a later step fails.
 *
 * @example
 * let s: BrowserSession;
 * beforeAll(async () => { s = await startBrowserSession({ context: { viewport: { width: 1000, height: 760 } } }); });
 * afterAll(() => s?.close());
 */
export async function startBrowserSession(options: BrowserSessionOptions = {}): Promise<BrowserSession> {
  const opened: (() => Promise<unknown>)[] = [];
  // A close that hangs says which step it hangs in (the browser, the app and its threads, the screenshots).
  const close = async () => {
    for (const step of opened.splice(0).reverse()) {
      const started = performance.now();
      const slow = setInterval(() => process.stderr.write(`browser session: still closing ${step.toString()} after ${((performance.now() - started) / 1000).toFixed(0)} s\n`), 10_000);
      await step().finally(() => clearInterval(slow));
    }
  };
  try {
    const shots = await screenshotDir();
    opened.push(() => shots.dispose());
    const t = await startDashboardApp(options.config, { model: options.model });
    opened.push(() => t.close());
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    const browser = await launchChromium();
    opened.push(() => browser.close());
    const context = await browser.newContext(options.context);
    if (options.permissions) await context.grantPermissions(options.permissions, { origin });
    const page = await context.newPage();
    const watch = watchPage(page, origin);
    return { t, origin, browser, context, page, watch, shots, close };
  } catch (error) {
    await close();
    throw error;
  }
}
