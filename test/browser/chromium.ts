import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

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
