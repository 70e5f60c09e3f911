/**
 * `npm run loadtest`: drives a real Cutout server for a bounded time with a mix of valid and
 * hostile requests at about twice what it can serve, from several tokens, and prints:
 * requests by status and code, any 5xx other than 503, whether the server crashed, its peak
 * RSS, and whether every 200 carried a valid PNG of the input's size.
 *
 *   npm run loadtest -- [--seconds 180] [--factor 2] [--tokens 4] [--rate-limit 40] [--out FILE.json]
 *
 * Exits 1 if the server crashed, answered a 5xx other than 503/504, or sent a bad PNG.
 * Only talks to 127.0.0.1.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { assembleModel } from '../src/model/assemble-model.js';
import { httpRequest, type HttpAnswer } from './bench/http-load.js';
import { RssSampler, readProcessMemory } from './lib/process-memory.js';
import { compileServer, startCutoutServer } from './lib/server-process.js';
import { hostileCases, validCases, type LoadCase } from './loadtest/cases.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '180' },
    factor: { type: 'string', default: '2' },
    tokens: { type: 'string', default: '4' },
    'rate-limit': { type: 'string', default: '40' },
    'max-requests': { type: 'string', default: '5000' },
    out: { type: 'string' },
  },
});
const seconds = Number(args.seconds);
const factor = Number(args.factor);
const tokenCount = Number(args.tokens);
const maxRequests = Number(args['max-requests']);

interface Outcome {
  name: string;
  valid: boolean;
  status: number;
  code?: string;
  ms: number;
  pngOk?: boolean;
  error?: string;
}

/** Checks a 200 answer: JSON with a Base64 PNG of the input's size with an alpha channel. */
async function pngMatches(answer: HttpAnswer, width: number, height: number): Promise<boolean> {
  try {
    const { image_base64: base64 } = JSON.parse(answer.body.toString()) as { image_base64: string };
    const meta = await sharp(Buffer.from(base64, 'base64')).metadata();
    return meta.format === 'png' && meta.width === width && meta.height === height && meta.channels === 4;
  } catch {
    return false;
  }
}

async function main(): Promise<void> {
  const log = (line: string) => console.log(line);
  const work = await mkdtemp(join(tmpdir(), 'cutout-loadtest-'));
  const buildDir = join(ROOT, '.loadtest-build');
  try {
    log(`compiling the server…`);
    const { warning } = await compileServer(ROOT, buildDir);
    if (warning) log(warning);
    const modelPath = await assembleModel(join(ROOT, 'data'));
    // The server reads these from its environment (startCutoutServer passes it through).
    process.env.CUTOUT_RATE_LIMIT = args['rate-limit'];
    process.env.LOG_LEVEL = 'warn';
    const server = await startCutoutServer({ root: ROOT, buildDir, dataDir: join(work, 'data'), modelsDir: dirname(modelPath), threads: 2 });
    const env = { ...process.env, CUTOUT_DATA_DIR: join(work, 'data'), DATABASE_URL: '' };

    // More user tokens, each with its own rate-limit count; their Token IDs are used hostilely too.
    const managed: string[] = [server.managedToken];
    const tokenIds: string[] = [];
    for (let i = 1; i < tokenCount; i++) {
      const created = spawnSync(process.execPath, [join(buildDir, 'cli/main.js'), 'tokens', 'create', '--name', `load-${i}`], { cwd: ROOT, env, encoding: 'utf8' });
      const tokenId = created.stdout.trim().split('\n').at(-1) ?? '';
      tokenIds.push(tokenId);
      const exchange = await httpRequest(`${server.baseUrl}/api/v1/auth/token`, { method: 'POST', headers: { token: tokenId } });
      managed.push((JSON.parse(exchange.body.toString()) as { managed_token: string }).managed_token);
    }

    const photosDir = join(ROOT, '../shared/fixtures/photos');
    const valid = await validCases(existsSync(photosDir) ? photosDir : undefined);
    const hostile = await hostileCases({ userTokenId: tokenIds[0] ?? 'cut_user_x' });

    // Capacity: sequential valid requests, after one warm-up.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
    const send = async (item: LoadCase, token: string): Promise<HttpAnswer> =>
      httpRequest(`${server.baseUrl}${item.path}`, {
        method: 'POST',
        agent,
        headers: { authorization: token, ...item.headers },
        body: item.body,
        timeoutMs: 120_000,
      });
    await send(valid[0], managed[0]);
    const serviceMs: number[] = [];
    for (const item of valid) serviceMs.push((await send(item, managed[0])).ms);
    const meanServiceMs = serviceMs.reduce((a, b) => a + b, 0) / serviceMs.length;
    const capacity = 1000 / meanServiceMs;
    const validRate = capacity * factor;
    log(`capacity ≈ ${capacity.toFixed(2)} removals/s (mean ${meanServiceMs.toFixed(0)} ms sequential); offering ${validRate.toFixed(2)} valid/s and as many hostile requests/s for ${seconds} s`);

    const memory = new RssSampler(server.pid, 250);
    const outcomes: Outcome[] = [];
    const inFlight = new Set<Promise<void>>();
    let crashed = false;
    const started = performance.now();
    let issued = 0;
    // Open loop: arrivals on a timer, whatever the answers do; bounded in time, count and sockets.
    const intervalMs = 1000 / (2 * validRate);
    while (performance.now() - started < seconds * 1000 && issued < maxRequests) {
      const isValid = issued % 2 === 0;
      const item = isValid ? valid[issued % valid.length] : hostile[(issued >> 1) % hostile.length];
      const token = item.token ?? managed[issued % managed.length];
      issued++;
      if (inFlight.size < 256) {
        const request = (async () => {
          const t0 = performance.now();
          try {
            const answer = await send(item, token);
            const code = answer.status === 200 ? undefined : (JSON.parse(answer.body.toString() || '{}') as { code?: string }).code;
            const outcome: Outcome = { name: item.name, valid: isValid, status: answer.status, code, ms: answer.ms };
            if (answer.status === 200) outcome.pngOk = item.expect ? await pngMatches(answer, item.expect.width, item.expect.height) : false;
            outcomes.push(outcome);
          } catch (error) {
            outcomes.push({ name: item.name, valid: isValid, status: 0, ms: performance.now() - t0, error: String(error) });
          }
        })();
        inFlight.add(request);
        void request.finally(() => inFlight.delete(request));
      }
      if (readProcessMemory(server.pid) === undefined) {
        crashed = true;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
    log(`issued ${issued} requests in ${((performance.now() - started) / 1000).toFixed(0)} s; waiting for ${inFlight.size} in flight…`);
    await Promise.all(inFlight);
    const { maxRss } = memory.stop();
    const peak = readProcessMemory(server.pid);
    crashed ||= peak === undefined;
    const health = await httpRequest(`${server.baseUrl}/healthz`).catch(() => undefined);
    await server.stop();

    const byStatus = new Map<string, number>();
    for (const o of outcomes) {
      const key = `${o.status}${o.code ? ` ${o.code}` : ''}`;
      byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
    }
    const unexpected5xx = outcomes.filter((o) => o.status >= 500 && o.status !== 503 && o.code !== 'deadline_exceeded');
    const connectionErrors = outcomes.filter((o) => o.status === 0);
    const oks = outcomes.filter((o) => o.status === 200);
    const badPng = oks.filter((o) => !o.pngOk);
    const hostileOk = oks.filter((o) => !o.valid);

    log('\nrequests by status and code:');
    for (const [key, count] of [...byStatus].sort()) log(`  ${key.padEnd(36)} ${count}`);
    log(`\nanswered: ${outcomes.length}, valid sent: ${outcomes.filter((o) => o.valid).length}, hostile sent: ${outcomes.filter((o) => !o.valid).length}`);
    log(`5xx other than 503 and 504 deadline_exceeded: ${unexpected5xx.length}${unexpected5xx.length ? ` (${unexpected5xx.slice(0, 5).map((o) => `${o.name}: ${o.status} ${o.code}`).join('; ')})` : ''}`);
    log(`connection errors: ${connectionErrors.length}${connectionErrors.length ? ` (${connectionErrors[0].error})` : ''}`);
    log(`crashes: ${crashed ? 1 : 0}; /healthz after the run: ${health?.status ?? 'no answer'}`);
    log(`peak RSS: ${((peak?.peak ?? maxRss) / 2 ** 20).toFixed(0)} MiB (VmHWM), ${(maxRss / 2 ** 20).toFixed(0)} MiB (largest sample)`);
    log(`200 answers: ${oks.length}, of which valid PNGs of the input's size: ${oks.length - badPng.length}; hostile requests answered 200: ${hostileOk.length}`);
    if (args.out) await writeFile(args.out, JSON.stringify({ seconds, factor, capacity, byStatus: Object.fromEntries(byStatus), peak, maxRss, outcomes }, null, 2));
    const failed = crashed || unexpected5xx.length > 0 || badPng.length > 0 || connectionErrors.length > 0 || hostileOk.length > 0;
    log(failed ? '\nFAIL' : '\nPASS');
    process.exitCode = failed ? 1 : 0;
  } finally {
    await rm(work, { recursive: true, force: true });
    await rm(buildDir, { recursive: true, force: true });
  }
}

await main();
