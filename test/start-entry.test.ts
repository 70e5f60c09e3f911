import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The server's entry (src/start.cts) sizes libuv's pool before anything starts it. Its two
 * CommonJS sources are compiled into a folder beside a `main.js` that, instead of the server,
 * starts the pool and prints the size it was given and the process's thread count; a preload tells the
 * entry how many cores the host has. Nothing else starts threads in that process, so two
 * runs differ in threads by exactly their pools' difference, unless the pool had started
 * before the entry set its size.
 */
describe('the server entry', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'cutout-start-'));
    mkdirSync(join(dir, 'threads'));
    for (const [source, target] of [
      ['src/start.cts', 'start.cjs'],
      ['src/threads/thread-defaults.cts', 'threads/thread-defaults.cjs'],
    ]) {
      const { outputText } = ts.transpileModule(readFileSync(source, 'utf8'), { fileName: source, compilerOptions: { module: ts.ModuleKind.NodeNext, target: ts.ScriptTarget.ES2022 } });
      writeFileSync(join(dir, target), outputText);
    }
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
    writeFileSync(
      join(dir, 'main.js'),
      [
        "import { readdirSync } from 'node:fs';",
        "import { stat } from 'node:fs/promises';",
        'await stat(import.meta.dirname); // runs on the pool, so the pool has started',
        "console.log(JSON.stringify({ pool: process.env.UV_THREADPOOL_SIZE, threads: readdirSync('/proc/self/task').length }));",
      ].join('\n'),
    );
    writeFileSync(join(dir, 'cores.cjs'), "require('node:os').availableParallelism = () => Number(process.env.TEST_CORES);\n");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const start = (env: Record<string, string>): { pool: string; threads: number } => {
    const { UV_THREADPOOL_SIZE: _, ...rest } = process.env;
    return JSON.parse(execFileSync(process.execPath, ['--require', join(dir, 'cores.cjs'), join(dir, 'start.cjs')], { env: { ...rest, ...env }, encoding: 'utf8' }));
  };

  it.runIf(process.platform === 'linux')('gives libuv a thread a core before its pool starts, and keeps an operator\'s size', () => {
    const sixteen = start({ TEST_CORES: '16' });
    const given = start({ TEST_CORES: '16', UV_THREADPOOL_SIZE: '4' });
    expect(sixteen.pool).toBe('16');
    expect(given.pool).toBe('4');
    expect(sixteen.threads - given.threads).toBe(12);
    expect(start({ TEST_CORES: '2' }).pool).toBe('4');
  });

  it('is what `npm start` runs (deploy.test.ts checks the image and the unit)', () => {
    expect(JSON.parse(readFileSync('package.json', 'utf8')).scripts.start).toMatch(/ node dist\/start\.cjs$/);
  });
});
