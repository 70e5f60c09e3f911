import { readFileSync } from 'node:fs';

/** A document of the repository (README.md, docs/…), read from the checkout. */
export function readDoc(path: string): string {
  return readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
}

/** The rows of the table between `<!-- name:start -->` and `<!-- name:end -->` of a document, as cells. */
export function tableRows(name: string, document: string): string[][] {
  const section = document.split(`<!-- ${name}:start -->`)[1]?.split(`<!-- ${name}:end -->`)[0];
  if (!section) throw new Error(`the document has no ${name} table`);
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()));
}
