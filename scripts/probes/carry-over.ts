/**
 * What a large photo leaves behind for the next: large requests one after another (a 49 MP
 * HEIC, a 50 MP JPEG as remove.bg's `format=zip` at full size, in turn) while one client
 * sends ordinary 0.7 MP photos throughout, so that no thread of the server is ever idle (as in
 * the hostile soak). For each large request: RSS just before it, its peak (VmHWM, reset when
 * it is sent), RSS when its answer is in and 3 s later. Memory a finished photo still holds
 * shows as RSS before the next above the first's, and adds to the next one's peak.
 *
 *   npx tsx scripts/probes/carry-over.ts [--rounds 6] [--root DIR]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { assembleModel } from '../../src/model/assemble-model.js';
import { httpRequest } from '../bench/http-load.js';
import { describeMachine } from '../bench/machine.js';
import { compileServer, startCutoutServer } from '../lib/server-process.js';
import { multipartBody } from '../lib/multipart-body.js';
import { scaledPhoto } from '../lib/scaled-photo.js';
import { memoryMiB } from '../lib/process-memory.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '6' }, root: { type: 'string', default: ROOT } } });
const root = resolve(values.root);
const buildDir = join(root, 'bench/.build');
await compileServer(root, buildDir);
await assembleModel(join(ROOT, 'data'));
const source = join(ROOT, '../shared/fixtures/photos/animal-3.jpg');
const native = (data: Buffer, filename: string) => ({ path: '/api/v1/background/remove/multipart', ...multipartBody([{ name: 'file', filename, contentType: 'application/octet-stream', data }]) });
const ordinary = native(await scaledPhoto(ROOT, source, 1000, 700, 'jpeg'), 'photo.jpg');
const large = [
  { kind: '49 MP HEIC', ...native(await scaledPhoto(ROOT, source, 7000, 7000, 'heic'), 'large.heic') },
  {
    kind: '50 MP zip',
    path: '/v1.0/removebg',
    ...multipartBody([
      { name: 'image_file', filename: 'large.jpg', contentType: 'image/jpeg', data: await scaledPhoto(ROOT, source, 8000, 6250, 'jpeg') },
      { name: 'size', data: 'full' },
      { name: 'format', data: 'zip' },
    ]),
  },
];
const machine = describeMachine();
const work = await mkdtemp(join(tmpdir(), 'cutout-probe-'));
const server = await startCutoutServer({ root, buildDir, dataDir: join(work, 'data'), modelsDir: join(ROOT, 'data/models'), threads: availableParallelism() });
const headers = (contentType: string, path: string) => ({ 'content-type': contentType, ...(path.startsWith('/v1.0') ? { 'x-api-key': server.tokenId } : { authorization: server.managedToken, accept: 'image/png' }) });
const send = async (shot: { path: string; body: Buffer; contentType: string }) => {
  const answer = await httpRequest(`${server.baseUrl}${shot.path}`, { method: 'POST', headers: headers(shot.contentType, shot.path), body: shot.body, timeoutMs: 300_000 });
  if (answer.status !== 200) throw new Error(`${shot.path}: ${answer.status} ${answer.body.toString().slice(0, 200)}`);
};
const mib = (field: 'VmRSS' | 'VmHWM') => memoryMiB(server.pid, field);
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
try {
  console.log(`# Carry-over: ${root}`);
  console.log(`${machine.cpu}, ${machine.cores} cores, Node ${machine.node}; load average at start ${machine.loadAverage.join(' ')}`);
  await send(ordinary);
  let running = true;
  const background = (async () => {
    while (running) await send(ordinary);
  })();
  await sleep(3000);
  const f = (n: number) => n.toFixed(0);
  for (let round = 0; round < Number(values.rounds); round++) {
    const shot = large[round % large.length];
    const before = await mib('VmRSS');
    await writeFile(`/proc/${server.pid}/clear_refs`, '5');
    const started = performance.now();
    await send(shot);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const peak = await mib('VmHWM');
    const atAnswer = await mib('VmRSS');
    await sleep(3000);
    console.log(`${shot.kind}: before ${f(before)} MiB, peak ${f(peak)} (+${f(peak - before)}), at the answer ${f(atAnswer)}, 3 s later ${f(await mib('VmRSS'))}; ${seconds} s; load ${loadavg()[0].toFixed(2)}`);
  }
  running = false;
  await background;
} finally {
  await server.stop();
  await rm(work, { recursive: true, force: true });
}
