import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelService } from '../../src/model/model-service.js';
import { fakeSegmenter } from '../helpers/fake-segmenter.js';
import { haveChromium, launchChromium, screenshotDir, watchPage, type PageWatch, type ScreenshotDir } from './chromium.js';
import { startDashboardApp, type DashboardApp } from './dashboard-app.js';

/**
 * GET /docs in a real browser (Debian's Chromium, as in dashboard-journey.test.ts): reached
 * from the dashboard's navigation, it renders this server's OpenAPI document with every
 * endpoint, loads nothing from anywhere else, and breaks no rule of its Content-Security-Policy
 * (a violation is a console error). The page needs no model: a fake one keeps this file fast.
 */

const EMAIL = 'owner@example.com';
const PASSWORD = 'a long enough password';

describe.skipIf(!haveChromium)('the API reference in a browser', () => {
  let t: DashboardApp;
  let origin: string;
  let browser: Browser;
  let page: Page;
  let shots: ScreenshotDir;
  let watch: PageWatch;

  beforeAll(async () => {
    shots = await screenshotDir();
    t = await startDashboardApp({ ownerEmail: EMAIL, ownerPassword: PASSWORD }, { model: ModelService.ofSegmenter(fakeSegmenter()) });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1100, height: 800 } })).newPage();
    watch = watchPage(page, origin);
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await shots?.dispose();
  });

  it('is linked from the dashboard, and shows every endpoint of the server\'s own OpenAPI document', async () => {
    await page.goto(`${origin}/dashboard/sign-in`);
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${origin}/dashboard/tokens`);
    await page.getByRole('link', { name: 'API reference' }).click();
    await page.waitForURL(`${origin}/docs`);

    await page.locator('.opblock').first().waitFor();
    const shown = await page.locator('.opblock-summary-path').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-path')));
    const document = (await (await fetch(`${origin}/api/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(shown.sort()).toEqual(Object.keys(document.paths).sort());
    for (const endpoint of ['/api/v1/background/remove/url', '/api/v1/background/remove/base64', '/api/v1/background/remove/multipart']) expect(shown).toContain(endpoint);
    await page.screenshot({ path: join(shots.path, 'api-reference.png'), fullPage: false });
  });

  it('opens an endpoint with its error answers and their codes', async () => {
    await page.locator('.opblock-summary-path[data-path="/api/v1/background/remove/multipart"]').click();
    const responses = page.locator('#operations-default-post_api_v1_background_remove_multipart .responses-table');
    await responses.waitFor();
    const text = await responses.textContent();
    for (const piece of ['503', 'queue_full', 'retry-after', '415', 'unsupported_image_format', 'x-request-id']) expect(text?.toLowerCase()).toContain(piece);
  });

  it('loaded nothing from elsewhere and broke no rule of its Content-Security-Policy', () => {
    expect(watch.foreignRequests).toEqual([]);
    expect(watch.pageErrors).toEqual([]);
  });
});
