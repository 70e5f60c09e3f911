import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { afterAll, describe, expect, it } from 'vitest';
import { resultsZip, type ZipEntry } from '../../src/jobs/results-zip.js';

/**
 * The results zip read back by real readers: Python's zipfile (which checks every entry's
 * CRC as it reads) and Info-ZIP's `unzip -t`, as written by default and with ZIP64 forced on
 * a small archive (what an archive past 4 GiB has).
 */

const dir = mkdtempSync(join(tmpdir(), 'results-zip-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Files on disk, one of each kind the archive meets: empty, small, several chunks, signatures inside. */
function files(): { entries: ZipEntry[]; expected: [string, number, string][] } {
  const signatures = Buffer.from([0x50, 0x4b, 0x07, 0x08, 0x50, 0x4b, 0x01, 0x02, 0x50, 0x4b, 0x03, 0x04]);
  const contents: [string, Buffer][] = [
    ['a.png', randomBytes(300_000)],
    ['a.png', Buffer.concat([randomBytes(1000), signatures, randomBytes(70_000)])],
    ['a.png', Buffer.alloc(0)],
    ['b.webp', randomBytes(17)],
    ['README', randomBytes(5)],
    ['README', randomBytes(6)],
  ];
  const names = ['a.png', 'a-2.png', 'a-3.png', 'b.webp', 'README', 'README-2'];
  const entries = contents.map(([name, bytes], at) => {
    const path = join(dir, `${at}.bin`);
    writeFileSync(path, bytes);
    return { name, path };
  });
  return { entries, expected: contents.map(([, bytes], at) => [names[at], bytes.length, sha(bytes)]) };
}

async function* listed(entries: ZipEntry[]): AsyncGenerator<ZipEntry> {
  yield* entries;
}

/** Every entry as Python's zipfile reads it (a CRC mismatch raises): name, size, SHA-256, version needed. */
function readWithPython(path: string): { entries: [string, number, string][]; versions: number[] } {
  const script = `
import hashlib, json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as archive:
    infos = archive.infolist()
    entries = [[i.filename, i.file_size, hashlib.sha256(archive.read(i)).hexdigest()] for i in infos]
    print(json.dumps({"entries": entries, "versions": [i.extract_version for i in infos]}))
`;
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', script, path], { encoding: 'utf8' }));
}

/** Whether the archive ends with a ZIP64 end-of-central-directory locator before its end record. */
const endsAsZip64 = (zip: Buffer) => zip.readUInt32LE(zip.length - 22) === 0x06054b50 && zip.readUInt32LE(zip.length - 42) === 0x07064b50;

describe('the results zip', () => {
  for (const forceZip64 of [false, true]) {
    it(`is read back whole by Python's zipfile and unzip -t${forceZip64 ? ', ZIP64 forced' : ''}`, async () => {
      const { entries, expected } = files();
      const zip = await buffer(resultsZip(listed(entries), { forceZip64 }));
      const path = join(dir, `results-${forceZip64}.zip`);
      writeFileSync(path, zip);

      const python = readWithPython(path);
      expect(python.entries).toEqual(expected);
      // 45 is "version needed" 4.5, ZIP64; 20 is 2.0.
      expect(python.versions).toEqual(expected.map(() => (forceZip64 ? 45 : 20)));
      expect(endsAsZip64(zip)).toBe(forceZip64);
      const tested = execFileSync('unzip', ['-t', path], { encoding: 'utf8' });
      expect(tested).toContain('No errors detected in compressed data');
      // Stored, not deflated: the results are compressed images already.
      expect(zip.length).toBeGreaterThan(expected.reduce((sum, [, size]) => sum + size, 0));
    });
  }

  it('reads each file only as fast as its reader takes the archive, and closes it when the reader leaves', async () => {
    const big = join(dir, 'big.bin');
    writeFileSync(big, randomBytes(4 << 20));
    const zip = resultsZip(listed(Array.from({ length: 8 }, (_, n) => ({ name: `${n}.png`, path: big }))));
    let taken = 0;
    zip.once('data', (chunk: Buffer) => {
      taken += chunk.length;
      zip.pause();
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // 32 MiB are on offer; a reader that stopped leaves no more than the streams' buffers waiting.
    expect(taken).toBeGreaterThan(0);
    expect(zip.readableLength + (zip as unknown as { writableLength: number }).writableLength).toBeLessThan(1 << 20);
    // A reader that leaves (fastify destroys the stream when the client goes) closes the file being read.
    const open = readdirSync('/proc/self/fd').length;
    zip.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(readdirSync('/proc/self/fd').length).toBe(open - 1);
  });

  it('fails its reader when a file cannot be read, or the list of entries fails', async () => {
    const { entries } = files();
    const missing = [...entries.slice(0, 2), { name: 'gone.png', path: join(dir, 'gone.bin') }];
    await expect(buffer(resultsZip(listed(missing)))).rejects.toMatchObject({ code: 'ENOENT' });
    async function* failing(): AsyncGenerator<ZipEntry> {
      yield entries[0];
      throw new Error('the store went away');
    }
    await expect(buffer(resultsZip(failing()))).rejects.toThrow('the store went away');
  });
});
