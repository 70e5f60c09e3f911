import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv } from '../scripts/lib/server-process.js';
import { makePhoto } from './helpers/images.js';
import { startServedCutout, type ServedCutout } from './helpers/served-cutout.js';

/**
 * The README's walkthrough, run as written: its shell block, with only the server's address
 * changed to a test server's, in a directory that holds `photo.jpg` and `photos/` and where
 * `npx cutout` finds this checkout's command, as it does in the checkout itself.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PASSWORD = 'walkthrough password 1';

function walkthroughScript(readme: string): string {
  const section = readme.split('<!-- walkthrough:start -->')[1]?.split('<!-- walkthrough:end -->')[0];
  const script = section?.match(/```sh\n([\s\S]*?)```/)?.[1];
  if (!script) throw new Error('README.md has no walkthrough block');
  return script;
}

function bash(script: string, cwd: string, env: Record<string, string>, stdin: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    // The CLI must open the test server's store, not one that this process's DATABASE_URL names.
    const child = execFile('bash', ['-euo', 'pipefail', '-c', script], { cwd, env: childEnv(env), timeout: 240_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, output: `${stdout}${stderr}` });
    });
    child.stdin?.end(stdin);
  });
}

/** Signs in to the dashboard over HTTP as a browser would: the form's CSRF token and cookie, then the form. */
async function signIn(origin: string, email: string, password: string): Promise<Response> {
  const page = await fetch(`${origin}/dashboard/sign-in`);
  const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const csrf = (await page.text()).match(/name="_csrf" value="([^"]+)"/)?.[1];
  if (!csrf) throw new Error('the sign-in page has no CSRF field');
  return fetch(`${origin}/dashboard/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
    body: new URLSearchParams({ _csrf: csrf, email, password }).toString(),
  });
}

describe("the README's walkthrough", () => {
  let cutout: ServedCutout;
  let work: string;

  beforeAll(async () => {
    cutout = await startServedCutout();
    work = await mkdtemp(join(tmpdir(), 'cutout-walkthrough-'));
    await writeFile(join(work, 'package.json'), '{"name": "walkthrough", "private": true}\n');
    await mkdir(join(work, 'node_modules', '.bin'), { recursive: true });
    await symlink(join(ROOT, 'bin', 'cutout.js'), join(work, 'node_modules', '.bin', 'cutout'));
    await writeFile(join(work, 'photo.jpg'), await makePhoto('jpeg', 400, 300));
    await mkdir(join(work, 'photos'));
    await writeFile(join(work, 'photos', 'one.jpg'), await makePhoto('jpeg', 320, 240));
    await writeFile(join(work, 'photos', 'two.png'), await makePhoto('png', 240, 320));
  }, 120_000);

  afterAll(async () => {
    await cutout?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('runs as written: a token, its exchange, one removal, the dashboard owner and a folder through the CLI', async () => {
    const script = walkthroughScript(await readFile(join(ROOT, 'README.md'), 'utf8'));
    expect(script).toContain('http://127.0.0.1:8080');
    const { code, output } = await bash(script.replaceAll('http://127.0.0.1:8080', cutout.origin), work, { CUTOUT_DATA_DIR: cutout.dataDir, CUTOUT_URL: cutout.origin }, `${PASSWORD}\n`);
    expect(code, output).toBe(0);

    // Step 3: the Base64 of the answer decoded to a transparent PNG of the photo's size.
    const cut = await sharp(join(work, 'cutout.png')).metadata();
    expect([cut.format, cut.width, cut.height, cut.hasAlpha]).toEqual(['png', 400, 300, true]);

    // Step 4: the account made on the command line signs in to the dashboard.
    const signedIn = await signIn(cutout.origin, 'you@example.com', PASSWORD);
    expect([signedIn.status, signedIn.headers.get('location')]).toEqual([303, '/dashboard/tokens']);

    // Step 5: each photo of the folder as WebP, cropped to its subject.
    const written = (await readdir(join(work, 'cutouts'))).sort();
    expect(written).toEqual(['one.webp', 'two.webp']);
    for (const file of written) {
      const meta = await sharp(join(work, 'cutouts', file)).metadata();
      expect([meta.format, meta.hasAlpha]).toEqual(['webp', true]);
      expect(meta.width! < 320 && meta.height! < 320, file).toBe(true);
    }
  }, 300_000);
});
