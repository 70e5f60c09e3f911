import type { Browser, BrowserContext, Page } from 'playwright-core';
import sharp, { type Sharp } from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrowserSession, type BrowserSession } from '../helpers/browser-session.js';
import { haveChromium, saveScreenshot, watchPage, type PageWatch, type ScreenshotDir } from './chromium.js';
import type { DashboardApp } from './dashboard-app.js';

/**
 * The person's hint on the try-it page, in a real browser with the real model: when the
 * model cuts the wrong subject, a box drawn over the "before" image (by mouse, by touch, or
 * typed by keyboard) is sent as the API's `roi`, in the photo's own pixels however the image
 * is scaled or turned on screen, and nothing outside it is left in the new cut.
 *
 * The photo has two balls side by side; the box takes the right one. Leaves
 * `09-try-it-box.png` and `10-phone-try-it-box.png` in CUTOUT_SCREENSHOT_DIR.
 */

const PASSWORD = 'a long enough password';
const WIDTH = 800;
const HEIGHT = 400;
/** The two balls' centres and radius, in the photo's pixels. */
const LEFT_BALL = { x: 200, y: 200 };
const RIGHT_BALL = { x: 600, y: 200 };
const RADIUS = 120;

/** Two shaded balls, orange and blue, on a pale backdrop: the model takes both as the subject. */
function twoBallPhoto(): Sharp {
  const ball = (id: string, at: { x: number; y: number }) => `<circle cx="${at.x}" cy="${at.y}" r="${RADIUS}" fill="url(#${id})"/>`;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}">
    <defs>
      <linearGradient id="bg" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#eef1f4"/><stop offset="1" stop-color="#cfd6dd"/></linearGradient>
      <radialGradient id="orange" cx="0.38" cy="0.35" r="0.75"><stop offset="0" stop-color="#ffd08a"/><stop offset="0.6" stop-color="#f07a12"/><stop offset="1" stop-color="#8a3a05"/></radialGradient>
      <radialGradient id="blue" cx="0.38" cy="0.35" r="0.75"><stop offset="0" stop-color="#9ec5ff"/><stop offset="0.6" stop-color="#2f62d8"/><stop offset="1" stop-color="#102a6b"/></radialGradient>
    </defs>
    <rect width="100%" height="100%" fill="url(#bg)"/>
    ${ball('orange', LEFT_BALL)}${ball('blue', RIGHT_BALL)}
  </svg>`;
  return sharp(Buffer.from(svg));
}

/** A box around the right ball, with a margin, as fractions of the photo's width and height. */
const AROUND_RIGHT = { x1: 440 / WIDTH, y1: 50 / HEIGHT, x2: 770 / WIDTH, y2: 360 / HEIGHT };

interface Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** A cut's alpha channel: the largest alpha outside a box, and the alpha at a point. */
function alphaOf(width: number, height: number, alpha: Buffer) {
  const at = (x: number, y: number) => alpha[y * width + x];
  return {
    width,
    height,
    at,
    largestOutside(box: Box): number {
      let largest = 0;
      for (let y = 0; y < height; y++) {
        for (let x = 0; x < width; x++) if (x < box.x1 || x >= box.x2 || y < box.y1 || y >= box.y2) largest = Math.max(largest, at(x, y));
      }
      return largest;
    },
  };
}

const parseRoi = (roi: string | null): Box | null => {
  if (roi === null) return null;
  const [x1, y1, x2, y2] = roi.split(' ').map(Number);
  return { x1, y1, x2, y2 };
};

// Each step asks for up to three cuts of the photo by the real model: more than the default
// minute on a busy two-core machine.
describe.skipIf(!haveChromium)('try-it: the subject box', { timeout: 180_000 }, () => {
  let session: BrowserSession;
  let t: DashboardApp;
  let origin: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let watch: PageWatch;
  let shots: ScreenshotDir;
  let photo: Buffer;

  beforeAll(async () => {
    session = await startBrowserSession({ config: { rateLimit: 0 }, context: { viewport: { width: 1000, height: 760 } } });
    ({ t, origin, browser, context, page, watch, shots } = session);
    await page.goto(`${origin}/dashboard`);
    await page.getByLabel('Setup code').fill(t.setupCode()!);
    await page.getByLabel('Email').fill('owner@example.com');
    await page.getByLabel('Password', { exact: false }).first().fill(PASSWORD);
    await page.getByLabel('Password again').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(`${origin}/dashboard/tokens`);
    photo = await twoBallPhoto().jpeg({ quality: 92 }).toBuffer();
  });

  afterAll(() => session?.close());

  /**
   * Does `action`, which makes the page ask for a cut, and answers the `roi` it sent (null
   * for none) and the cut it then shows.
   */
  async function cutBy(on: Page, action: () => Promise<unknown>): Promise<{ roi: Box | null; cut: ReturnType<typeof alphaOf> }> {
    const shown = await on.locator('#after').getAttribute('src');
    const [request] = await Promise.all([on.waitForRequest((r) => r.url().startsWith(`${origin}/dashboard/try-it/remove`)), action()]);
    await on.waitForFunction(
      (old) => {
        const after = document.getElementById('after') as HTMLImageElement;
        return after.getAttribute('src') !== old && after.complete && after.naturalWidth > 0 && !document.getElementById('compare')!.hasAttribute('aria-busy');
      },
      shown,
      { timeout: 60_000 },
    );
    // The page's CSP keeps a script from fetching the blob back: read the shown image's alpha through a canvas.
    const shownAlpha = await on.locator('#after').evaluate(async (img: HTMLImageElement) => {
      const bitmap = await createImageBitmap(img, { premultiplyAlpha: 'none', colorSpaceConversion: 'none' });
      const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
      const context = canvas.getContext('2d')!;
      context.drawImage(bitmap, 0, 0);
      const { data } = context.getImageData(0, 0, bitmap.width, bitmap.height);
      let text = '';
      for (let i = 3; i < data.length; i += 4) text += String.fromCharCode(data[i]);
      return { width: bitmap.width, height: bitmap.height, alpha: btoa(text) };
    });
    return { roi: parseRoi(new URL(request.url()).searchParams.get('roi')), cut: alphaOf(shownAlpha.width, shownAlpha.height, Buffer.from(shownAlpha.alpha, 'base64')) };
  }

  /** How many requests the page makes while `action` runs and a moment after. */
  async function requestsDuring(action: () => Promise<unknown>): Promise<number> {
    let sent = 0;
    const count = () => sent++;
    page.on('request', count);
    try {
      await action();
      await page.waitForTimeout(300);
    } finally {
      page.off('request', count);
    }
    return sent;
  }

  /** Where a point of the photo (fractions of its width and height) is on screen. */
  async function onScreen(on: Page, fx: number, fy: number): Promise<{ x: number; y: number }> {
    await on.locator('#before').scrollIntoViewIfNeeded();
    const rect = (await on.locator('#before').boundingBox())!;
    return { x: rect.x + fx * rect.width, y: rect.y + fy * rect.height };
  }

  /** The box a drag between two screen points should send: the photo's pixels it covers. */
  async function expectedBox(on: Page, from: { x: number; y: number }, to: { x: number; y: number }): Promise<Box> {
    const rect = (await on.locator('#before').boundingBox())!;
    const [width, height] = await on.locator('#before').evaluate((img: HTMLImageElement) => [img.naturalWidth, img.naturalHeight]);
    const px = (x: number) => ((x - rect.x) / rect.width) * width;
    const py = (y: number) => ((y - rect.y) / rect.height) * height;
    return { x1: px(Math.min(from.x, to.x)), y1: py(Math.min(from.y, to.y)), x2: px(Math.max(from.x, to.x)), y2: py(Math.max(from.y, to.y)) };
  }

  /** The sent box is the dragged one, to within a photo pixel or two (the mouse moves in whole CSS pixels). */
  function expectClose(sent: Box | null, expected: Box, tolerance: number): void {
    expect(sent).not.toBeNull();
    for (const side of ['x1', 'y1', 'x2', 'y2'] as const) expect(Math.abs(sent![side] - expected[side]), `${side}: sent ${sent![side]}, expected ${expected[side]}`).toBeLessThanOrEqual(tolerance);
  }

  it('without a box the model cuts both balls; a box dragged by mouse over the scaled photo keeps only the right one', async () => {
    await page.goto(`${origin}/dashboard/try-it`);
    const first = await cutBy(page, () => page.locator('#try-file').setInputFiles({ name: 'two-balls.jpg', mimeType: 'image/jpeg', buffer: photo }));
    expect(first.roi).toBeNull();
    const plain = first.cut;
    expect(plain.at(LEFT_BALL.x, LEFT_BALL.y)).toBeGreaterThan(200);
    expect(plain.at(RIGHT_BALL.x, RIGHT_BALL.y)).toBeGreaterThan(200);
    await expect(page.locator('#roi-clear').isDisabled()).resolves.toBe(true);

    // The photo is shown smaller than it is, and the stage the box is drawn on fits it exactly.
    const image = (await page.locator('#before').boundingBox())!;
    const stage = (await page.locator('#roi-stage').boundingBox())!;
    expect(image.width).toBeLessThan(WIDTH * 0.75);
    expect(stage).toEqual(image);
    const scale = WIDTH / image.width;

    const from = await onScreen(page, AROUND_RIGHT.x1, AROUND_RIGHT.y1);
    const to = await onScreen(page, AROUND_RIGHT.x2, AROUND_RIGHT.y2);
    const boxed = await cutBy(page, async () => {
      await page.mouse.move(from.x, from.y);
      await page.mouse.down();
      await page.mouse.move((from.x + to.x) / 2, (from.y + to.y) / 2, { steps: 4 });
      await page.mouse.move(to.x, to.y, { steps: 4 });
      await page.mouse.up();
    });
    expectClose(boxed.roi, await expectedBox(page, from, to), scale + 1);
    const cut = boxed.cut;
    expect([cut.width, cut.height]).toEqual([WIDTH, HEIGHT]);
    expect(cut.largestOutside(boxed.roi!)).toBe(0);
    expect(cut.at(LEFT_BALL.x, LEFT_BALL.y)).toBe(0);
    expect(cut.at(RIGHT_BALL.x, RIGHT_BALL.y)).toBeGreaterThan(200);

    // The box stays drawn where it was dragged, its edges are in the fields, and it can be cleared.
    const drawn = (await page.locator('#roi-box').boundingBox())!;
    expect(Math.abs(drawn.x - from.x)).toBeLessThanOrEqual(2);
    expect(Math.abs(drawn.y + drawn.height - to.y)).toBeLessThanOrEqual(2);
    const typed = await Promise.all(['#roi-x1', '#roi-y1', '#roi-x2', '#roi-y2'].map((id) => page.locator(id).inputValue()));
    expect(typed.join(' ')).toBe([boxed.roi!.x1, boxed.roi!.y1, boxed.roi!.x2, boxed.roi!.y2].join(' '));
    await expect(page.locator('#try-status').textContent()).resolves.toMatch(/^Cut inside the box in \d+\.\d s\.$/);
    await saveScreenshot(page, shots, '09-try-it-box');
  });

  it('a click on the photo is no box: nothing is sent and the box stays', async () => {
    const at = await onScreen(page, 0.3, 0.5);
    expect(await requestsDuring(() => page.mouse.click(at.x, at.y))).toBe(0);
    await expect(page.locator('#roi-box').isVisible()).resolves.toBe(true);
  });

  it('by keyboard: typed edges are shown, sent on Enter, checked, and the box is cleared with the button', async () => {
    // Tab from the last field of the options reaches the box's fields.
    await page.locator('#try-max-width').focus();
    for (let i = 0; i < 8 && (await page.evaluate(() => document.activeElement?.id)) !== 'roi-x1'; i++) await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('roi-x1');
    for (const value of ['60', '40', '350', '370']) {
      await page.keyboard.press('ControlOrMeta+a');
      await page.keyboard.type(value);
      await page.keyboard.press('Tab');
    }
    // The typed box is drawn over the photo before it is sent.
    const image = (await page.locator('#before').boundingBox())!;
    const drawn = (await page.locator('#roi-box').boundingBox())!;
    expect(Math.abs(drawn.x - (image.x + (60 / WIDTH) * image.width))).toBeLessThanOrEqual(1.5);
    expect(Math.abs(drawn.width - (290 / WIDTH) * image.width)).toBeLessThanOrEqual(1.5);

    // Enter in a field sends it, exactly as typed.
    await page.locator('#roi-y2').focus();
    const boxed = await cutBy(page, () => page.keyboard.press('Enter'));
    expect(boxed.roi).toEqual({ x1: 60, y1: 40, x2: 350, y2: 370 });
    const cut = boxed.cut;
    expect(cut.largestOutside(boxed.roi!)).toBe(0);
    expect(cut.at(LEFT_BALL.x, LEFT_BALL.y)).toBeGreaterThan(200);
    expect(cut.at(RIGHT_BALL.x, RIGHT_BALL.y)).toBe(0);

    // A right edge left of the left one is refused by the form, and nothing is sent.
    await page.locator('#roi-x2').fill('30');
    expect(await requestsDuring(() => page.locator('#roi-x2').press('Enter'))).toBe(0);
    await expect(page.locator('#roi-x2').evaluate((field: HTMLInputElement) => field.validationMessage)).resolves.toBe('Right must be more than Left.');
    await page.locator('#roi-x2').fill('350');

    // Clear the box, by keyboard: the model's own cut again, and the fields are empty.
    await page.locator('#roi-clear').focus();
    const cleared = await cutBy(page, () => page.keyboard.press('Enter'));
    expect(cleared.roi).toBeNull();
    const again = cleared.cut;
    expect(again.at(LEFT_BALL.x, LEFT_BALL.y)).toBeGreaterThan(200);
    expect(again.at(RIGHT_BALL.x, RIGHT_BALL.y)).toBeGreaterThan(200);
    await expect(page.locator('#roi-x1').inputValue()).resolves.toBe('');
    await expect(page.locator('#roi-box').isHidden()).resolves.toBe(true);
    // The button is disabled with no box to clear, and focus moved to the first field.
    await expect(page.locator('#roi-clear').isDisabled()).resolves.toBe(true);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('roi-x1');

    // Edges typed but not sent are cleared too, with nothing to send.
    await page.keyboard.type('120');
    await expect(page.locator('#roi-clear').isEnabled()).resolves.toBe(true);
    await page.locator('#roi-clear').focus();
    expect(await requestsDuring(() => page.keyboard.press('Enter'))).toBe(0);
    await expect(page.locator('#roi-x1').inputValue()).resolves.toBe('');
    await expect(page.locator('#roi-clear').isDisabled()).resolves.toBe(true);
  });

  it("maps the box to the photo's own pixels on a photo turned by its EXIF orientation", async () => {
    // Stored upright-turned (400 × 800) with orientation 6: shown, and cut, as 800 × 400.
    const stored = await sharp(await twoBallPhoto().png().toBuffer())
      .rotate(270)
      .withMetadata({ orientation: 6 })
      .jpeg({ quality: 92 })
      .toBuffer();
    expect(await sharp(stored).metadata()).toMatchObject({ width: HEIGHT, height: WIDTH, orientation: 6 });
    const first = await cutBy(page, () => page.locator('#try-file').setInputFiles({ name: 'turned.jpg', mimeType: 'image/jpeg', buffer: stored }));
    expect(first.roi).toBeNull();
    expect(await page.locator('#before').evaluate((img: HTMLImageElement) => [img.naturalWidth, img.naturalHeight])).toEqual([WIDTH, HEIGHT]);
    await expect(page.locator('#roi-size').textContent()).resolves.toBe(`${WIDTH} × ${HEIGHT}, 0 0 at the top left`);

    const from = await onScreen(page, AROUND_RIGHT.x1, AROUND_RIGHT.y1);
    const to = await onScreen(page, AROUND_RIGHT.x2, AROUND_RIGHT.y2);
    const boxed = await cutBy(page, async () => {
      await page.mouse.move(to.x, to.y);
      await page.mouse.down();
      await page.mouse.move(from.x, from.y, { steps: 6 });
      await page.mouse.up();
    });
    const image = (await page.locator('#before').boundingBox())!;
    expectClose(boxed.roi, await expectedBox(page, from, to), WIDTH / image.width + 1);
    const cut = boxed.cut;
    expect([cut.width, cut.height]).toEqual([WIDTH, HEIGHT]);
    expect(cut.largestOutside(boxed.roi!)).toBe(0);
    expect(cut.at(LEFT_BALL.x, LEFT_BALL.y)).toBe(0);
    expect(cut.at(RIGHT_BALL.x, RIGHT_BALL.y)).toBeGreaterThan(200);
  });

  it('at phone width (375 px), by touch: no sideways scrolling, a box dragged with a finger, cleared with a tap', async () => {
    const phoneContext = await browser.newContext({ viewport: { width: 375, height: 667 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2, storageState: await context.storageState() });
    try {
      const phone = await phoneContext.newPage();
      const phoneWatch = watchPage(phone, origin);
      await phone.goto(`${origin}/dashboard/try-it`);
      await cutBy(phone, () => phone.locator('#try-file').setInputFiles({ name: 'two-balls.jpg', mimeType: 'image/jpeg', buffer: photo }));
      const noSideways = () => phone.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
      await expect(noSideways()).resolves.toBe(true);
      for (const id of ['#roi-x1', '#roi-y2', '#roi-clear']) {
        const rect = (await phone.locator(id).boundingBox())!;
        expect(rect.x, id).toBeGreaterThanOrEqual(0);
        expect(rect.x + rect.width, id).toBeLessThanOrEqual(375);
      }

      // A finger dragged across the photo draws the box; the page does not scroll instead.
      const from = await onScreen(phone, AROUND_RIGHT.x1, AROUND_RIGHT.y1);
      const to = await onScreen(phone, AROUND_RIGHT.x2, AROUND_RIGHT.y2);
      const scrolled = await phone.evaluate(() => window.scrollY);
      const cdp = await phoneContext.newCDPSession(phone);
      const boxed = await cutBy(phone, async () => {
        await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [{ x: from.x, y: from.y }] });
        for (let step = 1; step <= 6; step++) {
          const f = step / 6;
          await cdp.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: [{ x: from.x + f * (to.x - from.x), y: from.y + f * (to.y - from.y) }] });
        }
        await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
      });
      expect(await phone.evaluate(() => window.scrollY)).toBe(scrolled);
      const image = (await phone.locator('#before').boundingBox())!;
      expect(image.width).toBeLessThan(375);
      expectClose(boxed.roi, await expectedBox(phone, from, to), WIDTH / image.width + 1);
      const cut = boxed.cut;
      expect(cut.largestOutside(boxed.roi!)).toBe(0);
      expect(cut.at(RIGHT_BALL.x, RIGHT_BALL.y)).toBeGreaterThan(200);
      await expect(noSideways()).resolves.toBe(true);
      await saveScreenshot(phone, shots, '10-phone-try-it-box');

      const cleared = await cutBy(phone, () => phone.locator('#roi-clear').tap());
      expect(cleared.roi).toBeNull();
      expect(cleared.cut.at(LEFT_BALL.x, LEFT_BALL.y)).toBeGreaterThan(200);
      expect(phoneWatch.pageErrors).toEqual([]);
      expect(phoneWatch.foreignRequests).toEqual([]);
    } finally {
      await phoneContext.close();
    }
  });

  it('a photo this browser cannot show (TIFF) still gets its cut, but offers no box to draw', async () => {
    const tiff = await twoBallPhoto().tiff().toBuffer();
    const first = await cutBy(page, () => page.locator('#try-file').setInputFiles({ name: 'two-balls.tiff', mimeType: 'image/tiff', buffer: tiff }));
    expect(first.roi).toBeNull();
    expect(first.cut.at(RIGHT_BALL.x, RIGHT_BALL.y)).toBeGreaterThan(200);
    await page.waitForFunction(() => (document.getElementById('before') as HTMLImageElement).complete);
    await expect(page.locator('#try-roi').isHidden()).resolves.toBe(true);
    // A photo it can show brings the box back.
    await cutBy(page, () => page.locator('#try-file').setInputFiles({ name: 'two-balls.jpg', mimeType: 'image/jpeg', buffer: photo }));
    await page.locator('#try-roi').waitFor({ state: 'visible' });
  });

  it('loaded nothing from outside the server, and the page logged no script error', () => {
    expect(watch.foreignRequests).toEqual([]);
    expect(watch.pageErrors).toEqual([]);
  });
});
