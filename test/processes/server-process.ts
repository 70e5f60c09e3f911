import { mkdtemp } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenService } from '../../src/auth/token-service.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import { childEnv, startServerProcess, type ServerProcess } from '../../scripts/lib/server-process.js';
import { int8ModelPath } from '../helpers/test-model.js';

export { childEnv, killLeftoverChildren, spawnTs, type ExitStatus, type LogLine, type ServerProcess } from '../../scripts/lib/server-process.js';

/**
 * The tests' side of a real server process (shutdown, durability): the launcher of
 * `scripts/lib/server-process.ts` with the tests' defaults, and a plain HTTP client.
 */

/**
 * Starts `src/main.ts` with the real model, one inference thread and one look per image
 * (CUTOUT_QUALITY=fast: these servers test the service, not the views), and resolves once
 * `GET /readyz` answers 200. `env` adds to or overrides that (CUTOUT_DATA_DIR is required).
 *
 * The model is the int8 one of test/helpers/test-model.ts, built once and given as
 * CUTOUT_MODEL_PATH, so that no child quantizes it again into its fresh data directory;
 * CUTOUT_MODEL_PRECISION=fp32 makes the child run that file as it is (a custom model has no
 * calibration file of its own to quantize it by) without timing the precision probe first.
 */
export async function startServer(env: Record<string, string>, timeoutMs = 90_000): Promise<ServerProcess> {
  const model = { CUTOUT_MODEL_PATH: await int8ModelPath(), CUTOUT_MODEL_PRECISION: 'fp32' };
  return startServerProcess({ env: childEnv({ CUTOUT_INFERENCE_THREADS: '1', CUTOUT_QUALITY: 'fast', LOG_LEVEL: 'info', ...model, ...env }), readyTimeoutMs: timeoutMs });
}

/** A fresh SQLite data directory (`mkdtemp` with `prefix`) holding one user token named `tokenName`, created with the store as the CLI would. */
export async function freshDataDir(prefix: string, tokenName = 'test'): Promise<{ dataDir: string; tokenId: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), prefix));
  const store = await openSqliteStore(dataDir);
  try {
    const { tokenId } = await new TokenService(store, { managedTokenTtl: 600 }).createUserToken(tokenName);
    return { dataDir, tokenId };
  } finally {
    await store.close();
  }
}

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** performance.now() when the whole answer had arrived. */
  at: number;
}

/**
 * One HTTP request on a connection of its own (no keep-alive agent), so that "a new
 * connection" in a test means a new TCP connection. Rejects with the socket error
 * (`ECONNREFUSED`, `ECONNRESET`, …) when there is no answer.
 */
export function send(
  origin: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; /** Aborting it closes the connection, as a client that gives up does. */ signal?: AbortSignal } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(`${origin}${path}`, { method, headers: options.headers, agent: false, signal: options.signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), at: performance.now() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Exchanges a Token ID for a managed token over HTTP. */
export async function exchangeOverHttp(origin: string, tokenId: string): Promise<string> {
  const answer = await send(origin, 'POST', '/api/v1/auth/token', { headers: { token: tokenId } });
  if (answer.status !== 200) throw new Error(`exchange answered ${answer.status}: ${answer.body.toString()}`);
  return (JSON.parse(answer.body.toString()) as { managed_token: string }).managed_token;
}

/** POST /api/v1/background/remove/base64 with `image`. */
export function removeBackgroundOverHttp(origin: string, managedToken: string, image: Buffer, requestId?: string): Promise<HttpAnswer> {
  return send(origin, 'POST', '/api/v1/background/remove/base64', {
    headers: { authorization: managedToken, 'content-type': 'application/json', ...(requestId ? { 'x-request-id': requestId } : {}) },
    body: JSON.stringify({ image_base64: image.toString('base64') }),
  });
}
