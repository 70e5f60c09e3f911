import { spawn, spawnSync } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';

/** Runs a command to its end; rejects with its output when it fails (unless `allowFailure`). */
export function run(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; allowFailure?: boolean; input?: string } = {}): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env ?? process.env, stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0 && !options.allowFailure) reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${output}`));
      else resolve({ code: code ?? 1, output });
    });
    if (options.input !== undefined) {
      // A command that exits without reading its input must not fail the run.
      child.stdin!.on('error', () => {});
      child.stdin!.end(options.input);
    }
  });
}

/** True when `command` can be started here. */
export function available(command: string): boolean {
  return spawnSync(command, ['--version'], { stdio: 'ignore' }).error === undefined;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every `everyMs` until it returns true; rejects after `timeoutMs` naming `what`. */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number, everyMs = 100): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** A TCP port nothing listens on now, on loopback (the kernel's choice). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
