import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { childEnv } from '../../scripts/lib/server-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** What a run of the CLI printed, and how it exited (null: it was killed at its timeout). */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `cutout <args>` from source (src/cli/main.ts through tsx), with none of this process's
 * CUTOUT_*, DATABASE_URL or REDIS_URL (so it opens only what `env` names), `input` on its
 * stdin, and a timeout: each start of the CLI through tsx costs a second or two.
 *
 * @example const { code, stdout } = await runCli(['tokens', 'list'], { env: { CUTOUT_DATA_DIR: dir } })
 */
export function runCli(args: string[], options: { env?: Record<string, string>; input?: string; timeoutMs?: number } = {}): Promise<CliResult> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: childEnv(options.env ?? {}),
    timeout: options.timeoutMs ?? 30_000,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(options.input ?? '');
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}
