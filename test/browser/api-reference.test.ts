import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelService } from '../../src/model/model-service.js';
import { startBrowserSession, type BrowserSession } from '../helpers/browser-session.js';
import { fakeSegmenter } from '../helpers/fake-segmenter.js';
import { haveChromium, type PageWatch, type ScreenshotDir } from './chromium.js';

/**
 * GET /docs in a real browser (Debian's Chromium, as in dashboard-journey.test.ts): reached
 * from the dashboard's navigation, it renders this server's OpenAPI document with every
 * endpoint, grouped (removal, tokens, compatibility) under Cutout's version, loads nothing
 * from anywhere else, and breaks no rule of its Content-Security-Policy (a violation is a
 * console error). The page needs no model: a fake one keeps this file fast.
 */

const EMAIL = 'owner@example.com';
const PASSWORD = 'a long enough password';

describe.skipIf(!haveChromium)('the API reference in a browser', () => {
  let session: BrowserSession;
  let origin: string;
  let page: Page;
  let shots: ScreenshotDir;
  let watch: PageWatch;

  beforeAll(async () => {
    session = await startBrowserSession({
      config: { ownerEmail: EMAIL, ownerPassword: PASSWORD },
      model: ModelService.ofSegmenter(fakeSegmenter()),
      context: { viewport: { width: 1100, height: 800 } },
    });
    ({ origin, page, shots, watch } = session);
  });

  afterAll(() => session?.close());

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
    // A path with two operations (a job's GET and DELETE) shows once for each.
    expect([...new Set(shown)].sort()).toEqual(Object.keys(document.paths).sort());
    for (const endpoint of ['/api/v1/background/remove/url', '/api/v1/background/remove/base64', '/api/v1/background/remove/multipart']) expect(shown).toContain(endpoint);
    await page.screenshot({ path: join(shots.path, 'api-reference.png'), fullPage: false });
  });

  it('shows Cutout\'s version from package.json, and the operations in their groups, each with its description', async () => {
    const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect((await page.locator('.info .title .version').first().textContent())?.trim()).toBe(version);
    const groups = {
      removal: ['/api/v1/background/remove/url', '/api/v1/background/remove/base64', '/api/v1/background/remove/multipart'],
      jobs: ['/api/v1/jobs', '/api/v1/jobs/multipart', '/api/v1/jobs/{id}', '/api/v1/jobs/{id}/items/{item}', '/api/v1/jobs/{id}/results'],
      tokens: ['/api/v1/auth/token'],
      compatibility: ['/v1.0/removebg', '/v1.0/account', '/v1/segment'],
    };
    const headings = page.locator('h3.opblock-tag');
    await expect(headings.evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-tag')))).resolves.toEqual(Object.keys(groups));
    for (const [tag, paths] of Object.entries(groups)) {
      const heading = page.locator(`h3.opblock-tag[data-tag="${tag}"]`);
      expect((await heading.textContent())?.length, `${tag}'s description`).toBeGreaterThan(tag.length + 20);
      const section = page.locator('.opblock-tag-section').filter({ has: heading });
      const shown = await section.locator('.opblock-summary-path').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-path')));
      expect([...new Set(shown)].sort(), tag).toEqual([...paths].sort());
    }
  });

  it('opens an endpoint with its error answers and their codes', async () => {
    await page.locator('.opblock-summary-path[data-path="/api/v1/background/remove/multipart"]').click();
    const responses = page.locator('#operations-removal-post_api_v1_background_remove_multipart .responses-table');
    await responses.waitFor();
    const text = await responses.textContent();
    for (const piece of ['503', 'queue_full', 'retry-after', '415', 'unsupported_image_format', 'x-request-id']) expect(text?.toLowerCase()).toContain(piece);
  });

  it('loaded nothing from elsewhere and broke no rule of its Content-Security-Policy', () => {
    expect(watch.foreignRequests).toEqual([]);
    expect(watch.pageErrors).toEqual([]);
  });
});
