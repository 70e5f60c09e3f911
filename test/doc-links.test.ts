import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { headingAnchors } from './helpers/markdown-anchors.js';

/**
 * The documentation's links hold: every relative link in README.md and docs/ names a file or
 * folder of the checkout, and every `#anchor` names a heading of the page it points at, by
 * GitHub's rule for heading anchors. Links to other sites are not fetched (the tests run offline).
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOCS = ['README.md', 'clients/typescript/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The text outside fenced code blocks and inline code, where Markdown reads links and headings. */
function prose(markdown: string): string[] {
  let fenced = false;
  const lines: string[] = [];
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    else if (!fenced) lines.push(line.replace(/`[^`]*`/g, (code) => code.replaceAll('[', ' ').replaceAll(']', ' ')));
  }
  return lines;
}

function links(file: string): { target: string; line: number }[] {
  const found: { target: string; line: number }[] = [];
  const text = readFileSync(join(ROOT, file), 'utf8');
  // Line numbers count the fenced lines too, so that a failure points at the right line.
  let fenced = false;
  text.split('\n').forEach((line, index) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return;
    }
    if (fenced) return;
    const outsideCode = line.replace(/`[^`]*`/g, '');
    for (const match of outsideCode.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) found.push({ target: match[1], line: index + 1 });
  });
  return found;
}

describe('the documentation', () => {
  for (const file of DOCS) {
    it(`${file}: every relative link and anchor resolves`, () => {
      const broken: string[] = [];
      for (const { target, line } of links(file)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const [path, anchor] = target.split('#', 2);
        const resolved = path === '' ? join(ROOT, file) : join(ROOT, dirname(file), decodeURIComponent(path));
        const where = `${file}:${line} → ${target}`;
        if (!existsSync(resolved)) {
          broken.push(`${where}: no ${relative(ROOT, resolved)}`);
          continue;
        }
        if (anchor === undefined) continue;
        if (!resolved.endsWith('.md') || statSync(resolved).isDirectory()) {
          broken.push(`${where}: an anchor into a file that is not Markdown`);
          continue;
        }
        if (!headingAnchors(readFileSync(resolved, 'utf8')).has(anchor)) broken.push(`${where}: ${relative(ROOT, resolved)} has no heading #${anchor}`);
      }
      expect(broken).toEqual([]);
    });
  }

  it('finds the anchors GitHub makes, so that the check above can fail', () => {
    const anchors = headingAnchors('# Cutout\n## Coming from remove.bg or Photoroom\n## The answer\n## The answer\n```sh\n# 1. not a heading\n```\n## `npm run cluster`\n## Memory: the C library\'s two variables');
    expect([...anchors]).toEqual(['cutout', 'coming-from-removebg-or-photoroom', 'the-answer', 'the-answer-1', 'npm-run-cluster', 'memory-the-c-librarys-two-variables']);
    expect(prose('a [b](c)\n```\n[d](e)\n```').join('\n')).toBe('a [b](c)');
  });

  it('no page under docs/ is above about 25 KB', () => {
    for (const file of DOCS.filter((f) => f.startsWith('docs/'))) expect(statSync(join(ROOT, file)).size, file).toBeLessThanOrEqual(26_000);
  });

  it('names features, not work-item numbers', () => {
    for (const file of DOCS) {
      const numbered = prose(readFileSync(join(ROOT, file), 'utf8')).filter((line) => /\bissues? #?\d+/i.test(line));
      expect(numbered, file).toEqual([]);
    }
  });
});
