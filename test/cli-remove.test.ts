import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { unzipSync } from 'fflate';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliResult } from './helpers/cli.js';
import { makePhoto } from './helpers/images.js';
import { startServedCutout, type ServedCutout } from './helpers/served-cutout.js';

/**
 * `cutout remove` as a user runs it: the CLI in a child process, over HTTP, against the
 * real server with the real model (one for the file). Output goes to a pipe, so the CLI
 * prints one line per image; one test runs it under a pseudo-terminal for the progress bar.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI_TIMEOUT = 120_000;
const UPLOAD = '/api/v1/background/remove/multipart';

const sha256 = async (path: string) => createHash('sha256').update(await readFile(path)).digest('hex');

describe('cutout remove', () => {
  let cutout: ServedCutout;
  let tokenId: string;
  let work: string;
  let imageHost: Server;
  let hostOrigin: string;

  /** Runs `cutout remove <args>` from source with the server and token in the environment. */
  const remove = (args: string[], env: Record<string, string> = {}): Promise<CliResult> =>
    runCli(['remove', ...args], { env: { CUTOUT_URL: cutout.origin, CUTOUT_TOKEN_ID: tokenId, ...env }, timeoutMs: CLI_TIMEOUT });

  beforeAll(async () => {
    cutout = await startServedCutout({ CUTOUT_RATE_LIMIT: '0', CUTOUT_URL_ALLOW_PRIVATE: 'true' });
    tokenId = await cutout.createTokenId('cli');
    work = await mkdtemp(join(tmpdir(), 'cutout-cli-remove-'));
    // A folder as a user has one: photos at two levels, a broken "photo", a note, a hidden file.
    await mkdir(join(work, 'photos', 'shoes'), { recursive: true });
    await writeFile(join(work, 'photos', 'ball.jpg'), await makePhoto('jpeg', 320, 240));
    await writeFile(join(work, 'photos', 'shoes', 'red.png'), await makePhoto('png', 200, 150));
    await writeFile(join(work, 'photos', 'broken.jpg'), 'this is not a JPEG');
    await writeFile(join(work, 'photos', 'notes.txt'), 'not an image name: left out');
    await writeFile(join(work, 'photos', '.hidden.jpg'), await makePhoto('jpeg', 64, 48));
    const served = await makePhoto('webp', 160, 120);
    imageHost = createServer((_request, response) => response.writeHead(200, { 'content-type': 'image/webp' }).end(served));
    await new Promise<void>((resolve) => imageHost.listen(0, '127.0.0.1', resolve));
    hostOrigin = `http://127.0.0.1:${(imageHost.address() as AddressInfo).port}`;
  }, 120_000);

  afterAll(async () => {
    await new Promise((resolve) => imageHost?.close(resolve));
    await cutout?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('walks a folder, writes every result with its sub-folders, reports the failure with its code, and exits 1', { timeout: CLI_TIMEOUT }, async () => {
    const inputsBefore = await sha256(join(work, 'photos', 'ball.jpg'));
    const out = join(work, 'out');
    const run = await remove([join(work, 'photos'), '-o', out, '--concurrency', '2']);
    expect(run.code, run.stderr).toBe(1);
    const lines = run.stdout.trim().split('\n');
    expect(lines.filter((line) => line.startsWith('written  '))).toHaveLength(2);
    expect(lines.find((line) => line.startsWith('failed   '))).toMatch(/broken\.jpg: unsupported_image_format \(415\): /);
    expect(lines.at(-2)).toMatch(/^2 written, 0 skipped, 1 failed in \d+\.\d s: \d+\.\d\d images\/s\.$/);
    expect(lines.at(-1)).toBe('Failed: 1 unsupported_image_format.');

    expect((await readdir(out, { recursive: true })).sort()).toEqual(['ball.png', 'shoes', join('shoes', 'red.png')]);
    const ball = await sharp(join(out, 'ball.png')).metadata();
    expect([ball.format, ball.width, ball.height, ball.hasAlpha]).toEqual(['png', 320, 240, true]);
    const red = await sharp(join(out, 'shoes', 'red.png')).metadata();
    expect([red.width, red.height]).toEqual([200, 150]);
    expect(await sha256(join(work, 'photos', 'ball.jpg'))).toBe(inputsBefore);
  });

  it('--skip-existing sends only the images without a result yet', { timeout: CLI_TIMEOUT }, async () => {
    const out = join(work, 'out');
    const uploadsBefore = cutout.requestsTo(UPLOAD).length;
    const run = await remove([join(work, 'photos'), '-o', out, '--skip-existing']);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`skipped  ${join(work, 'photos', 'ball.jpg')} (`);
    expect(run.stdout).toContain(`skipped  ${join(work, 'photos', 'shoes', 'red.png')} (`);
    expect(run.stdout).toMatch(/^0 written, 2 skipped, 1 failed in /m);
    // Only broken.jpg was sent again: wait for its line in the server's log, then count.
    await cutout.server.waitForLog(() => cutout.requestsTo(UPLOAD).length > uploadsBefore);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(cutout.requestsTo(UPLOAD).length - uploadsBefore).toBe(1);
  });

  it('never writes over an input: a run whose result would replace one stops before it starts, with exit 2', async () => {
    const folder = join(work, 'in-place');
    await mkdir(folder);
    await writeFile(join(folder, 'logo.png'), await makePhoto('png', 64, 48));
    const before = await sha256(join(folder, 'logo.png'));
    const uploadsBefore = cutout.requestsTo(UPLOAD).length;
    const run = await remove([folder, '-o', folder]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('would be written over the input');
    expect(await sha256(join(folder, 'logo.png'))).toBe(before);
    expect(await readdir(folder)).toEqual(['logo.png']);
    expect(cutout.requestsTo(UPLOAD).length).toBe(uploadsBefore);
  });

  // From here on no test counts the server's uploads, and each writes into a folder of its
  // own: these run at once (consecutive concurrent tests run together; the ones above do not).
  it('passes the output options, names the file by its format, and takes URLs for the server to fetch', { timeout: CLI_TIMEOUT, concurrent: true }, async () => {
    const out = join(work, 'options');
    const run = await remove([join(work, 'photos', 'ball.jpg'), `${hostOrigin}/catalogue/Blue%20Shoe.webp`, '-o', out, '--format', 'webp', '--max-width', '100', '--crop']);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect((await readdir(out)).sort()).toEqual(['Blue_Shoe.webp', 'ball.webp']);
    for (const name of ['Blue_Shoe.webp', 'ball.webp']) {
      const meta = await sharp(join(out, name)).metadata();
      expect(meta.format).toBe('webp');
      expect(meta.width).toBeLessThanOrEqual(100);
    }
    // Cropped to the ball: about square, where the whole photo is 4:3.
    const ball = await sharp(join(out, 'ball.webp')).metadata();
    expect(Math.abs(ball.width! / ball.height! - 1)).toBeLessThan(0.15);
  });

  it('--format auto names each file by what came (PNG with transparency, JPEG without); --format zip writes the archive as it came', { timeout: CLI_TIMEOUT, concurrent: true }, async () => {
    const out = join(work, 'auto');
    const ball = join(work, 'photos', 'ball.jpg');
    // Three runs into folders of their own, at once; the run that skips comes after its folder's.
    const [transparent, onColour, zipped] = await Promise.all([
      remove([ball, '-o', join(out, 'cut'), '--format', 'auto']),
      remove([ball, '-o', join(out, 'flat'), '--format', 'auto', '--bg-color', '2050c0']),
      remove([ball, '-o', join(out, 'zip'), '--format', 'zip']),
    ]);
    expect([transparent.code, onColour.code], transparent.stdout + transparent.stderr + onColour.stdout + onColour.stderr).toEqual([0, 0]);
    expect(await readdir(join(out, 'cut'))).toEqual(['ball.png']);
    expect(await readdir(join(out, 'flat'))).toEqual(['ball.jpg']);
    expect(onColour.stdout).toContain(`-> ${join(out, 'flat', 'ball.jpg')}`);
    expect((await sharp(join(out, 'cut', 'ball.png')).metadata()).format).toBe('png');
    expect((await sharp(join(out, 'flat', 'ball.jpg')).metadata()).format).toBe('jpeg');
    // A second run skips either ending.
    const again = await remove([ball, '-o', join(out, 'flat'), '--format', 'auto', '--bg-color', '2050c0', '--skip-existing']);
    expect(again.stdout).toMatch(/^0 written, 1 skipped, 0 failed in /m);

    expect(zipped.code, zipped.stdout + zipped.stderr).toBe(0);
    expect(await readdir(join(out, 'zip'))).toEqual(['ball.zip']);
    const archive = unzipSync(await readFile(join(out, 'zip', 'ball.zip')));
    expect(Object.keys(archive).sort()).toEqual(['alpha.png', 'color.jpg']);
    expect(await sharp(archive['color.jpg']).metadata()).toMatchObject({ format: 'jpeg', width: 320, height: 240 });
    expect(await sharp(archive['alpha.png']).metadata()).toMatchObject({ format: 'png', width: 320, height: 240 });
  });

  it('refuses a bad command line with exit 2 and says why', { concurrent: true }, async () => {
    const [noToken, badFormat, noOutput, nothing] = await Promise.all([
      remove([join(work, 'photos'), '-o', join(work, 'x')], { CUTOUT_TOKEN_ID: '' }),
      remove([join(work, 'photos'), '-o', join(work, 'x'), '--format', 'gif']),
      remove([join(work, 'photos')]),
      remove([join(work, 'missing'), '-o', join(work, 'x')]),
    ]);
    expect([noToken.code, badFormat.code, noOutput.code, nothing.code]).toEqual([2, 2, 2, 2]);
    expect(noToken.stderr).toContain('CUTOUT_TOKEN_ID');
    expect(badFormat.stderr).toContain('--format must be auto, png, jpg, jpeg, webp or zip, not "gif".');
    expect(noOutput.stderr).toContain('-o OUTDIR');
    expect(nothing.stderr).toContain('no such file or folder');
    expect(existsSync(join(work, 'x'))).toBe(false);
  });

  // script(1) is util-linux's (bsdutils on Debian), there on any Debian machine.
  it.skipIf(!existsSync('/usr/bin/script'))('on a terminal, shows a progress bar with done/total, rate and time left, then the summary', { timeout: CLI_TIMEOUT, concurrent: true }, async () => {
    const out = join(work, 'tty');
    const command = ['node', '--import', 'tsx', 'src/cli/main.ts', 'remove', join(work, 'photos', 'ball.jpg'), '-o', out].map((word) => `'${word}'`).join(' ');
    // util-linux's script(1) gives the CLI a pseudo-terminal, as a person's shell would.
    const child = spawn('script', ['-qec', command, '/dev/null'], { cwd: ROOT, env: { ...process.env, CUTOUT_URL: cutout.origin, CUTOUT_TOKEN_ID: tokenId } });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code, output).toBe(0);
    expect(output).toContain('0/1 | 0.00 images/s | ? left | 0 failed');
    expect(output).toMatch(/1\/1 \| \d+\.\d\d images\/s \| 0s left \| 0 failed/);
    expect(output).toMatch(/1 written, 0 skipped, 0 failed in /);
    expect(output).not.toContain('written  ');
    expect(await readdir(out)).toEqual(['ball.png']);
  });
});
