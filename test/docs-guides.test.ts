import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { headingAnchors } from './helpers/markdown-anchors.js';

/**
 * docs/ holds guides: what is true now, once. A run's date, a commit hash and trials that lost
 * belong in bench/results/ (the record of a figure), docs/internals/ (the reasoning of a
 * mechanism) or the commit message; this fails when a guide gains one, and when the guides
 * together outgrow what a reader can take in.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOCS = join(ROOT, 'docs');
/**
 * The guides' total, in bytes: everything under docs/ but docs/internals/. What a reader can
 * take in; a page that needs more room makes it by moving reasoning to docs/internals/ and
 * history to bench/results/.
 */
const GUIDES_MAX_BYTES = 110_000;

/** Every Markdown file under `dir`, but those under docs/internals/. */
function guides(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return path === join(DOCS, 'internals') ? [] : guides(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

/**
 * A commit hash: 7 to 40 hex digits, at least one a letter and one a digit, standing alone
 * (not inside a file name, a `sha256:`/`md5:` digest, a `#colour` or a truncated digest
 * ending in `…`). A model's digest is 32 or 64 digits after its algorithm's name, so it never
 * matches; a plain number has no letter.
 */
const HASH = /(?<![\w:#/.…-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w/…-])/;
/** A dated run: a date with a time of day after it, or "run of / run on / measured" a date. */
const DATED_RUN = /\b20\d\d-[01]\d-[0-3]\d\b[^\n]{0,16}?\b[0-2]?\d:[0-5]\d\b|\b(?:runs? (?:of|on)|measured(?: on)?) 20\d\d-[01]\d-[0-3]\d\b/i;
/** A table of trials that lost, by its usual heading or opening words. */
const TRIED = /^(?:#{1,6}\s*|\*\*)?tried,? (?:and )?not kept/i;

/** The lines of `text` that break one of the three rules, each with its line number and rule. */
export function recordLines(text: string): string[] {
  return text.split('\n').flatMap((line, index) => {
    const broken = [HASH.test(line) && 'a commit hash', DATED_RUN.test(line) && 'a dated run', TRIED.test(line.trim()) && '"tried, not kept"'].filter(Boolean);
    return broken.length ? [`${index + 1}: ${broken.join(', ')}: ${line.trim().slice(0, 120)}`] : [];
  });
}


/** The relative links of `file` (outside code) that name no file, or no heading of the page they point at. */
function brokenLinks(file: string): string[] {
  let fenced = false;
  return readFileSync(file, 'utf8').split('\n').flatMap((line) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced || /^\s*```/.test(line)) return [];
    return [...line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)].flatMap(([, target]) => {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return [];
      const [path, anchor] = target.split('#', 2);
      const resolved = path === '' ? file : join(dirname(file), decodeURIComponent(path));
      if (!existsSync(resolved)) return [`${target}: no such file`];
      if (anchor !== undefined && resolved.endsWith('.md') && !headingAnchors(readFileSync(resolved, 'utf8')).has(anchor)) return [`${target}: no such heading`];
      return [];
    });
  });
}

describe('docs/ holds guides, not records', () => {
  it('finds what it looks for, and leaves numbers, digests and colours alone', () => {
    const planted = [
      'Full tables: `git show 741fd14:docs/benchmarks.md`.',
      'Commit 7e4c92f, 1288 s, Node 20.20.2.',
      'at a server at 94e4bd8 (before the output options)',
      'The run of record: 2026-11-28 09:47 UTC on a 2-core Zen 3.',
      '| 2026-11-26 03:53 | int8 | Zen 5 |',
      'Measured 2026-11-23 (Xeon family 6 model 167).',
      '## Tried, not kept',
      'Tried, not kept (same metrics, cached masks): a grey guide.',
    ];
    for (const line of planted) expect(recordLines(line), line).toHaveLength(1);
    const fine = [
      '| `isnet` | bundled | `sha256:b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb` | 88.2 |',
      '| `isnet-general-use` | `md5:fc16ebd8b0c10d971d3513d564d01e29` | 179 |',
      'data/models/isnet-medium-fe1b9f06-fp32-mask.onnx, SHA-256 58f621f0…',
      '`CUTOUT_MAX_IMAGE_BYTES` | `26214400` | a colour like #ff8800aa, 1795000000 bytes',
      'the idle server holds about 470 MiB; a job of 2026 photos at 10:30 a minute',
      'What was tried and not kept is in bench/results/.',
    ];
    for (const line of fine) expect(recordLines(line), line).toEqual([]);
  });

  for (const file of guides(DOCS)) {
    const name = relative(ROOT, file);
    it(`${name}: no commit hash, no dated run, no "tried, not kept"`, () => {
      expect(recordLines(readFileSync(file, 'utf8')), `${name} keeps a record: move it to bench/results/ or docs/internals/`).toEqual([]);
    });
  }

  // test/doc-links.test.ts checks the guides' links; these are where the guides send readers on.
  const records = [
    ...readdirSync(join(DOCS, 'internals')).map((name) => join(DOCS, 'internals', name)),
    ...readdirSync(join(ROOT, 'bench/results')).filter((name) => name.startsWith('history-')).map((name) => join(ROOT, 'bench/results', name)),
  ].filter((file) => file.endsWith('.md'));
  it('docs/internals/ and the bench/results/ histories link only to files and headings that exist', () => {
    for (const file of records) expect(brokenLinks(file), relative(ROOT, file)).toEqual([]);
  });

  it(`the guides together stay under ${GUIDES_MAX_BYTES / 1000} KB`, () => {
    const sizes = guides(DOCS).map((file) => ({ file: relative(ROOT, file), bytes: statSync(file).size }));
    const total = sizes.reduce((sum, { bytes }) => sum + bytes, 0);
    const largest = sizes.sort((a, b) => b.bytes - a.bytes).slice(0, 5).map(({ file, bytes }) => `${file} ${bytes}`);
    expect(total, `guides total ${total} bytes; largest: ${largest.join(', ')}`).toBeLessThan(GUIDES_MAX_BYTES);
  });
});
