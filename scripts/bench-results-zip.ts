/**
 * The results zip's writer (yazl, with ZIP64) against the one it replaced (fflate's `Zip`, no
 * ZIP64), on `--files` result-sized files (1-3 MB of random bytes, which neither compresses,
 * like PNG and WebP) on disk: each archive streamed into a Writable that drops it, the two
 * writers alternating for `--rounds` rounds. Prints each writer's median MB/s (of files
 * archived) and CPU seconds per GB archived, their ratios, and the load average. The files
 * are made once under the system's temp directory and deleted at the end.
 *
 *   npx tsx scripts/bench-results-zip.ts [--files 1000] [--rounds 5]
 */
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { Zip, ZipPassThrough } from 'fflate';
import { resultsZip, type ZipEntry } from '../src/jobs/results-zip.js';
import { describeMachine } from './bench/machine.js';
import { percentile } from './bench/stats.js';

const { values } = parseArgs({ options: { files: { type: 'string', default: '1000' }, rounds: { type: 'string', default: '5' } } });

/** The writer before yazl, as it was: fflate's streaming Zip, each file passed through. */
function fflateZip(entries: ZipEntry[]): Readable {
  async function* chunks(): AsyncGenerator<Uint8Array> {
    const ready: Uint8Array[] = [];
    let failure: Error | null = null;
    const zip = new Zip((error, chunk) => {
      if (error) failure = error;
      else ready.push(chunk);
    });
    const drain = function* () {
      if (failure) throw failure;
      yield* ready.splice(0);
    };
    for (const entry of entries) {
      const file = new ZipPassThrough(entry.name);
      zip.add(file);
      for await (const chunk of createReadStream(entry.path)) {
        file.push(chunk as Buffer);
        yield* drain();
      }
      file.push(new Uint8Array(0), true);
      yield* drain();
    }
    zip.end();
    yield* drain();
  }
  return Readable.from(chunks(), { objectMode: false });
}

async function* listed(entries: ZipEntry[]): AsyncGenerator<ZipEntry> {
  yield* entries;
}

/** Streams one archive into nothing; its wall seconds, CPU seconds and size. */
async function timed(archive: () => Readable): Promise<{ seconds: number; cpu: number; bytes: number }> {
  let bytes = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await pipeline(
    archive(),
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        bytes += chunk.length;
        done();
      },
    }),
  );
  const cpu = process.cpuUsage(cpuBefore);
  return { seconds: (performance.now() - started) / 1000, cpu: (cpu.user + cpu.system) / 1e6, bytes };
}

const count = Number(values.files);
const rounds = Number(values.rounds);
const machine = describeMachine();
const dir = await mkdtemp(join(tmpdir(), 'cutout-bench-zip-'));
try {
  await mkdir(dir, { recursive: true });
  const entries: ZipEntry[] = [];
  let total = 0;
  for (let n = 0; n < count; n++) {
    const size = 1_000_000 + Math.floor(Math.random() * 2_000_000);
    const path = join(dir, `${n}.png`);
    await writeFile(path, randomBytes(size));
    entries.push({ name: `${n}.png`, path });
    total += size;
  }
  console.log(`# Results zip writers: ${count} files, ${(total / 1e6).toFixed(0)} MB; ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}; load average ${machine.loadAverage.join(' ')}`);
  const writers = { fflate: () => fflateZip(entries), yazl: () => resultsZip(listed(entries)) };
  // One unmeasured pass each, so that both read the files from the page cache.
  for (const make of Object.values(writers)) await timed(make);
  const runs: Record<string, { mbps: number; cpuPerGB: number }[]> = { fflate: [], yazl: [] };
  for (let round = 0; round < rounds; round++) {
    for (const [name, make] of Object.entries(writers)) {
      const run = await timed(make);
      runs[name].push({ mbps: total / 1e6 / run.seconds, cpuPerGB: run.cpu / (total / 1e9) });
      console.log(`round ${round + 1} ${name}: ${(total / 1e6 / run.seconds).toFixed(0)} MB/s, ${(run.cpu / (total / 1e9)).toFixed(2)} CPU s per GB, archive ${run.bytes} bytes (load ${loadavg()[0].toFixed(2)})`);
    }
  }
  const median = (name: string, field: 'mbps' | 'cpuPerGB') => percentile(runs[name].map((run) => run[field]), 50);
  for (const name of Object.keys(writers)) console.log(`${name}: median ${median(name, 'mbps').toFixed(0)} MB/s, ${median(name, 'cpuPerGB').toFixed(2)} CPU s per GB`);
  console.log(`yazl / fflate: ${(median('yazl', 'mbps') / median('fflate', 'mbps')).toFixed(2)}× the speed, ${(median('yazl', 'cpuPerGB') / median('fflate', 'cpuPerGB')).toFixed(2)}× the CPU (load average at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')})`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
