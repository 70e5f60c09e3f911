/**
 * The remove.bg-compatible route against the native API, and HEIC's decode:
 *
 *   npx tsx scripts/bench-compat.ts [--runs 7] [--megapixels 2.5] [--heic-megapixels 12]
 *
 * One in-process app with the real model (as the tests build it). For one generated photo,
 * one request at a time, alternating in the same rounds: the native base64 endpoint
 * (`Accept: image/png`) and `POST /v1.0/removebg` with the same photo and the same answer
 * (`size=full`, `format=png`); it prints each one's median and spread and their ratio, which
 * is what to read on a shared machine. Then it makes an HEIC of `--heic-megapixels` with
 * Debian's heif-enc and times its decode on the HEIC thread (3 runs, after one to start it).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createServices } from '../src/create-services.js';
import { assembleModel } from '../src/model/assemble-model.js';
import { ModelService } from '../src/model/model-service.js';
import { loadSegmenter } from '../src/model/onnx-segmenter.js';
import { HeicThread } from '../src/pipeline/heic-thread.js';
import { openSqliteStore } from '../src/store/sqlite-store.js';
import { makeSubjectPhoto } from '../test/helpers/images.js';
import { describeMachine } from './bench/machine.js';
import { formatMs, median } from './bench/stats.js';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '7' }, megapixels: { type: 'string', default: '2.5' }, 'heic-megapixels': { type: 'string', default: '12' } } });
const side = (megapixels: number) => ({ width: Math.round(Math.sqrt((megapixels * 1e6 * 4) / 3)), height: Math.round(Math.sqrt((megapixels * 1e6 * 3) / 4)) });
const dir = await mkdtemp(join(tmpdir(), 'cutout-bench-compat-'));
console.log(JSON.stringify(describeMachine()));

try {
  const { width, height } = side(Number(args.megapixels));
  const photo = await (await makeSubjectPhoto(width, height)).jpeg({ quality: 90 }).toBuffer();
  const config = loadConfig({}, { dataDir: dir, logLevel: 'silent', rateLimit: 0 });
  const store = await openSqliteStore(dir);
  const segmenter = await loadSegmenter(await assembleModel(join(dir, 'models')), { threads: config.inferenceThreads });
  const { services, close } = createServices(config, store, { model: ModelService.ofSegmenter(segmenter) });
  const app = await buildApp(services);
  const { tokenId } = await services.tokens.createUserToken('bench');
  const { managedToken } = await services.tokens.exchange(tokenId);
  const b64 = photo.toString('base64');
  const requests = {
    native: () => app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: managedToken, accept: 'image/png' }, payload: { image_base64: b64 } }),
    compat: () => app.inject({ method: 'POST', url: '/v1.0/removebg', headers: { 'x-api-key': tokenId }, payload: { image_file_b64: b64, size: 'full', format: 'png' } }),
  };
  const times: Record<keyof typeof requests, number[]> = { native: [], compat: [] };
  for (const name of ['native', 'compat'] as const) await requests[name](); // warm-up
  for (let round = 0; round < Number(args.runs); round++) {
    for (const name of ['native', 'compat'] as const) {
      const start = performance.now();
      const answer = await requests[name]();
      if (answer.statusCode !== 200) throw new Error(`${name}: ${answer.statusCode} ${answer.body.slice(0, 200)}`);
      times[name].push(performance.now() - start);
    }
  }
  console.log(`${width}×${height} JPEG, ${args.runs} rounds, alternating:`);
  for (const name of ['native', 'compat'] as const) console.log(`  ${name}: median ${formatMs(median(times[name]))} ms (${formatMs(Math.min(...times[name]))}–${formatMs(Math.max(...times[name]))})`);
  console.log(`  compat ÷ native: ${(median(times.compat) / median(times.native)).toFixed(3)}`);
  await app.close();
  await close();
  await segmenter.close();
  await store.close();

  const heicSize = side(Number(args['heic-megapixels']));
  const png = join(dir, 'heic-source.png');
  await (await makeSubjectPhoto(heicSize.width, heicSize.height)).png().toFile(png);
  await promisify(execFile)('heif-enc', ['-q', '80', '-o', join(dir, 'photo.heic'), png]);
  const heic = await readFile(join(dir, 'photo.heic'));
  const thread = new HeicThread();
  await thread.readable(heic, 1e9);
  const decodes: number[] = [];
  for (let run = 0; run < 3; run++) {
    const start = performance.now();
    await thread.readable(heic, 1e9);
    decodes.push(performance.now() - start);
  }
  await thread.close();
  console.log(`HEIC ${heicSize.width}×${heicSize.height} (${(heic.length / 1e6).toFixed(2)} MB) to pixels on an HEIC thread: median ${formatMs(median(decodes))} ms (${decodes.map(formatMs).join(', ')})`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
