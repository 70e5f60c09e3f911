import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePhoto } from './helpers/images.js';
import { startServedCutout, type ServedCutout } from './helpers/served-cutout.js';

/**
 * The examples in examples/ (curl, Python with requests, the TypeScript SDK) run as a user
 * would run them, against the real server, and docs/clients.md shows each file as it is: neither
 * can rot without a failing test.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
// Debian's python3-requests (.ci/run installs it) is for Debian's python3, whatever else is first on PATH.
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const EXAMPLES = [
  { name: 'curl', file: 'examples/curl/remove-background.sh', command: ['sh'] },
  { name: 'Python', file: 'examples/python/remove_background.py', command: [PYTHON] },
  { name: 'TypeScript SDK', file: 'examples/typescript/remove-background.ts', command: [process.execPath, '--import', 'tsx'] },
] as const;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: readonly string[], args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command[0], [...command.slice(1), ...args], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 90_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
  });
}

describe('examples/', () => {
  let cutout: ServedCutout;
  let work: string;
  let photo: string;
  let env: Record<string, string>;
  const results = new Map<string, Buffer>();

  beforeAll(async () => {
    cutout = await startServedCutout({ CUTOUT_RATE_LIMIT: '0' });
    work = await mkdtemp(join(tmpdir(), 'cutout-examples-'));
    photo = join(work, 'photo.jpg');
    await writeFile(photo, await makePhoto('jpeg', 400, 300));
    env = { CUTOUT_URL: cutout.origin, CUTOUT_TOKEN_ID: await cutout.createTokenId('examples') };
  }, 120_000);

  afterAll(async () => {
    await cutout?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  for (const example of EXAMPLES) {
    it(`${example.name} (${example.file}) writes the subject, cropped, as WebP`, async () => {
      const output = join(work, `${example.name.replace(/\W+/g, '-')}.webp`);
      const { code, stdout, stderr } = await run(example.command, [example.file, photo, output], env);
      expect(code, `${stdout}${stderr}`).toBe(0);
      const meta = await sharp(output).metadata();
      expect([meta.format, meta.hasAlpha]).toEqual(['webp', true]);
      expect(stdout.trim()).toBe(`wrote ${output} (${meta.width}x${meta.height})`);
      // The ball is round: cropped to it, the result is about square (the photo is 4:3).
      expect(Math.abs(meta.width! / meta.height! - 1)).toBeLessThan(0.15);
      results.set(example.name, await readFile(output));
    });
  }

  it('all three made the same removal, byte for byte', () => {
    expect(results.size).toBe(EXAMPLES.length);
    const [first, ...others] = [...results.values()];
    for (const other of others) expect(other.equals(first)).toBe(true);
  });

  it('a bad Token ID makes each example fail with a non-zero exit and the server\'s reason', async () => {
    for (const example of EXAMPLES) {
      const output = join(work, `refused-${example.name.replace(/\W+/g, '-')}.webp`);
      const { code, stdout, stderr } = await run(example.command, [example.file, photo, output], { ...env, CUTOUT_TOKEN_ID: 'cut_user_not-a-real-token' });
      expect(code, example.name).not.toBe(0);
      expect(`${stdout}${stderr}`, example.name).toMatch(/invalid_token/);
      expect(existsSync(output), example.name).toBe(false);
    }
  });

  it('docs/clients.md shows each example as it is in examples/', async () => {
    const clientsDoc = await readFile(join(ROOT, 'docs', 'clients.md'), 'utf8');
    for (const example of EXAMPLES) expect(clientsDoc, `docs/clients.md lacks ${example.file} as it is`).toContain(await readFile(join(ROOT, example.file), 'utf8'));
  });
});
