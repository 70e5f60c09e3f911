/**
 * Where a large photo's CPU goes: one request of each size the hostile soak sends (a 0.7 MP
 * JPEG, a 49 MP HEIC, a 50 MP JPEG), one at a time on an idle server, each after a first
 * round that warms it. Prints each request's Server-Timing, the CPU time of the server's live
 * threads by thread (name and id), and that of the whole process, which also counts the
 * threads that ended meanwhile (an HEIC thread that decoded a large photo is ended after it).
 *
 *   npx tsx scripts/probes/large-cpu.ts
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { assembleModel } from '../../src/model/assemble-model.js';
import { httpRequest } from '../bench/http-load.js';
import { compileServer, startCutoutServer } from '../bench/server-process.js';
import { multipartBody } from '../lib/multipart-body.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TICK_MS = 10;

/** The fixture photo scaled to `width × height`, as a JPEG or an HEIC (made once, in data/heic-memory/, as the soak's). */
async function photo(width: number, height: number, heic: boolean): Promise<Buffer> {
  const dir = join(ROOT, 'data/heic-memory');
  await mkdir(dir, { recursive: true });
  const stem = join(dir, `${width}x${height}`);
  if (!existsSync(`${stem}.jpg`)) await sharp(join(ROOT, '../shared/fixtures/photos/animal-3.jpg')).autoOrient().resize(width, height, { fit: 'fill' }).jpeg({ quality: 90 }).toFile(`${stem}.jpg`);
  if (heic && !existsSync(`${stem}.heic`)) await promisify(execFile)('heif-enc', ['-q', '50', '-o', `${stem}.heic`, `${stem}.jpg`]);
  return readFile(`${stem}.${heic ? 'heic' : 'jpg'}`);
}

/** utime + stime of a /proc stat line, in ms (the fields after the name in brackets). */
function cpuMs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return TICK_MS * (Number(fields[11]) + Number(fields[12]));
}

function threadsOf(pid: number): Map<number, { name: string; ms: number }> {
  const threads = new Map<number, { name: string; ms: number }>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
      threads.set(Number(task), { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), ms: cpuMs(stat) });
    } catch {
      // ended while read
    }
  }
  return threads;
}

const buildDir = join(ROOT, 'bench/.build');
await compileServer(ROOT, buildDir);
await assembleModel(join(ROOT, 'data'));
const shots = [
  { kind: '0.7 MP JPEG', bytes: await photo(1000, 700, false), name: 'photo.jpg' },
  { kind: '49 MP HEIC', bytes: await photo(7000, 7000, true), name: 'large.heic' },
  { kind: '50 MP JPEG', bytes: await photo(8000, 6250, false), name: 'large.jpg' },
];
const work = await mkdtemp(join(tmpdir(), 'cutout-probe-'));
const server = await startCutoutServer({ root: ROOT, buildDir, dataDir: join(work, 'data'), modelsDir: join(ROOT, 'data/models'), threads: availableParallelism() });
try {
  for (const round of ['warm-up', 'measured']) {
    for (const shot of shots) {
      const { body, contentType } = multipartBody([{ name: 'file', filename: shot.name, contentType: 'application/octet-stream', data: shot.bytes }]);
      const processBefore = cpuMs(readFileSync(`/proc/${server.pid}/stat`, 'utf8'));
      const before = threadsOf(server.pid);
      const answer = await httpRequest(`${server.baseUrl}/api/v1/background/remove/multipart`, { method: 'POST', headers: { authorization: server.managedToken, 'content-type': contentType, accept: 'image/png' }, body, timeoutMs: 300_000 });
      const after = threadsOf(server.pid);
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
