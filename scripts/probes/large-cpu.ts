/**
 * Where a large photo's CPU goes: one request of each size the hostile soak sends (a 0.7 MP
 * JPEG, a 49 MP HEIC, a 50 MP JPEG), one at a time on an idle server, each after a first
 * round that warms it. Prints each request's Server-Timing, the CPU time of the server's live
 * threads by thread (name and id), and that of the whole process, which also counts the
 * threads that ended meanwhile (an HEIC thread that decoded a large photo is ended after it).
 *
 *   npx tsx scripts/probes/large-cpu.ts
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assembleModel } from '../../src/model/assemble-model.js';
import { cpuTicksOfStat } from '../bench/cpu-account.js';
import { httpRequest } from '../bench/http-load.js';
import { compileServer, startCutoutServer } from '../lib/server-process.js';
import { multipartBody } from '../lib/multipart-body.js';
import { threadsOf } from '../lib/proc-threads.js';
import { scaledPhoto } from '../lib/scaled-photo.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TICK_MS = 10;

/** utime + stime of a /proc stat line, in ms. */
const cpuMs = (stat: string): number => TICK_MS * cpuTicksOfStat(stat);

/** The process's live threads by id: name and CPU ms so far. */
const threadTimes = async (pid: number) => new Map((await threadsOf(pid)).map(({ id, name, cpuTicks }) => [id, { name, ms: TICK_MS * cpuTicks }]));

const buildDir = join(ROOT, 'bench/.build');
await compileServer(ROOT, buildDir);
await assembleModel(join(ROOT, 'data'));
const source = join(ROOT, '../shared/fixtures/photos/animal-3.jpg');
const shots = [
  { kind: '0.7 MP JPEG', bytes: await scaledPhoto(ROOT, source, 1000, 700, 'jpeg'), name: 'photo.jpg' },
  { kind: '49 MP HEIC', bytes: await scaledPhoto(ROOT, source, 7000, 7000, 'heic'), name: 'large.heic' },
  { kind: '50 MP JPEG', bytes: await scaledPhoto(ROOT, source, 8000, 6250, 'jpeg'), name: 'large.jpg' },
];
const work = await mkdtemp(join(tmpdir(), 'cutout-probe-'));
const server = await startCutoutServer({ root: ROOT, buildDir, dataDir: join(work, 'data'), modelsDir: join(ROOT, 'data/models'), threads: availableParallelism() });
try {
  for (const round of ['warm-up', 'measured']) {
    for (const shot of shots) {
      const { body, contentType } = multipartBody([{ name: 'file', filename: shot.name, contentType: 'application/octet-stream', data: shot.bytes }]);
      const processBefore = cpuMs(readFileSync(`/proc/${server.pid}/stat`, 'utf8'));
      const before = await threadTimes(server.pid);
      const answer = await httpRequest(`${server.baseUrl}/api/v1/background/remove/multipart`, { method: 'POST', headers: { authorization: server.managedToken, 'content-type': contentType, accept: 'image/png' }, body, timeoutMs: 300_000 });
      const after = await threadTimes(server.pid);
      const processMs = cpuMs(readFileSync(`/proc/${server.pid}/stat`, 'utf8')) - processBefore;
      if (round === 'warm-up') continue;
      const used = [...after].map(([id, { name, ms }]) => ({ id, name, ms: ms - (before.get(id)?.ms ?? 0) })).filter((thread) => thread.ms > 0);
      used.sort((a, b) => b.ms - a.ms);
      const live = used.reduce((sum, thread) => sum + thread.ms, 0);
      console.log(`\n${shot.kind}: ${answer.status} in ${answer.ms.toFixed(0)} ms; CPU ${processMs} ms in the process, ${live} ms in its live threads; ${answer.headers['server-timing']}`);
      for (const thread of used) console.log(`  ${thread.id} ${thread.name}: ${thread.ms} ms`);
    }
  }
} finally {
  await server.stop();
  await rm(work, { recursive: true, force: true });
}
