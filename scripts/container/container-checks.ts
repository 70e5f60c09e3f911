/**
 * What the container test (test-container.ts) and its compose half (compose-stack.ts) both
 * use: running commands, waiting for readiness, and the checks that count towards the closing
 * line: a token made by the CLI inside a container, and a removal through a published port.
 */
import { spawn, spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import sharp from 'sharp';

const root = new URL('../..', import.meta.url).pathname;

/** The checks passed so far. */
export const passed = { count: 0 };

/** A check that counts towards the closing line; throws with `what` when it fails. */
export function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`FAILED: ${what}`);
  passed.count++;
  console.log(`   ok: ${what}`);
}

/** Runs a command, throwing with its output when it fails; returns its stdout. */
export function run(command: string, argv: string[], options: SpawnSyncOptions = {}): string {
  const result = spawnSync(command, argv, { encoding: 'utf8', maxBuffer: 256 * 2 ** 20, ...options });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`${command} ${argv.join(' ')} exited with ${result.status}:\n${String(result.stdout ?? '').slice(-4000)}${String(result.stderr ?? '').slice(-4000)}`);
  return String(result.stdout ?? '');
}

/** Runs a command with its output in `logFile`, resolving when it ends well. */
export function runLogged(command: string, argv: string[], logFile: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const log = createWriteStream(logFile);
    const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    child.on('error', reject);
    child.on('close', (code) => {
      log.end();
      if (code === 0) resolve();
      else {
        const tail = existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-40).join('\n') : '';
        reject(new Error(`${command} ${argv.slice(0, 2).join(' ')} … exited with ${code}; the end of ${logFile}:\n${tail}`));
      }
    });
  });
}

/** A TCP port free on 127.0.0.1 just now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** Waits until `url` answers 200, for at most `seconds`. */
export async function waitReady(url: string, seconds: number): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const answer = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (answer.status === 200) return;
      last = `${answer.status} ${(await answer.text()).slice(0, 200)}`;
    } catch (error) {
      last = String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${url} was not ready after ${seconds} s (last: ${last})`);
}

/** The CA that npm needs inside the build behind this machine's proxy, when there is one. */
export function extraCaFile(): string | undefined {
  const fromEnv = process.env.NODE_EXTRA_CA_CERTS;
  if (fromEnv && existsSync(fromEnv)) return fromEnv;
  const fromNpm = spawnSync('npm', ['config', 'get', 'cafile'], { encoding: 'utf8' }).stdout?.trim();
  if (fromNpm && fromNpm !== 'null' && existsSync(fromNpm)) return fromNpm;
  return undefined;
}

/** A photo to remove the background of: a real one when the shared fixtures are here. */
export function testPhoto(): Buffer {
  const shared = join(root, '../shared/fixtures/labelled/grabcut/images');
  if (existsSync(shared)) {
    const first = readdirSync(shared).filter((name) => name.endsWith('.jpg')).sort()[0];
    if (first) return readFileSync(join(shared, first));
  }
  return readFileSync(join(root, 'test/fixtures/heic/orientation-6.jpg'));
}

/**
 * Exchanges a Token ID for a managed token and removes the background of `photo` at `base`;
 * checks the answer is a PNG with both transparent and opaque pixels.
 */
export async function removeThrough(base: string, tokenId: string, photo: Buffer, where: string): Promise<void> {
  const exchange = await fetch(`${base}/api/v1/auth/token`, { method: 'POST', headers: { token: tokenId } });
  check(exchange.status === 200, `${where}: POST /api/v1/auth/token answers 200 (got ${exchange.status})`);
  const { managed_token: managed } = (await exchange.json()) as { managed_token: string };
  check(managed.startsWith('cut_mgd_'), `${where}: the exchange gives a managed token`);
  const answer = await fetch(`${base}/api/v1/background/remove/base64`, {
    method: 'POST',
    headers: { authorization: managed, 'content-type': 'application/json' },
    body: JSON.stringify({ image_base64: photo.toString('base64') }),
    signal: AbortSignal.timeout(120_000),
  });
  const body = (await answer.json()) as { image_base64?: string };
  check(answer.status === 200 && typeof body.image_base64 === 'string', `${where}: POST /api/v1/background/remove/base64 answers 200 with an image (got ${answer.status} ${JSON.stringify(body).slice(0, 200)})`);
  await checkCutout(Buffer.from(body.image_base64!, 'base64'), where);
}

/** A cut-out: a PNG with an alpha channel, part of it transparent and part opaque. */
async function checkCutout(png: Buffer, where: string): Promise<void> {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  const meta = await sharp(png).metadata();
  check(meta.format === 'png' && info.channels === 4, `${where}: the answer is a PNG with alpha (${meta.format}, ${info.channels} channels)`);
  let clear = 0;
  let opaque = 0;
  for (let i = 3; i < data.length; i += 4) {
    if (data[i] < 16) clear++;
    else if (data[i] > 240) opaque++;
  }
  const pixels = info.width * info.height;
  check(clear > pixels * 0.05 && opaque > pixels * 0.05, `${where}: the background is gone and the subject kept (${((100 * clear) / pixels).toFixed(0)} % transparent, ${((100 * opaque) / pixels).toFixed(0)} % opaque)`);
}

/** The Token ID that `cutout tokens create` prints on its last line, run inside `container`. */
export function createToken(container: string, name: string): string {
  const out = run('podman', ['exec', container, 'cutout', 'tokens', 'create', '--name', name]);
  const tokenId = out.trim().split('\n').at(-1)!.trim();
  check(tokenId.startsWith('cut_user_'), `cutout tokens create inside ${container} prints a Token ID`);
  return tokenId;
}

