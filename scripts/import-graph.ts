/**
 * The import graph of `src/`, and its circles: between files, and between the top-level
 * folders of `src/` (a file directly in `src/` counts as a folder of its own). Type-only
 * imports count: they tie the code together as much as any other. `test/unit/import-graph.test.ts`
 * fails on a circle; run this file to see the folder graph and any circle:
 *
 *   npx tsx scripts/import-graph.ts
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Each file of the tree (relative to it) and the files of the tree it imports. */
export type ImportGraph = Map<string, Set<string>>;

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Reads every `.ts` file under `root` and resolves its relative imports to files of the tree. */
export function readImportGraph(root: string): ImportGraph {
  const files = listTypeScript(root);
  const known = new Set(files);
  const graph: ImportGraph = new Map();
  for (const file of files) {
    const targets = new Set<string>();
    const text = readFileSync(join(root, file), 'utf8');
    for (const match of text.matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2];
      if (!specifier.startsWith('.')) continue;
      const target = relative(root, resolve(root, dirname(file), specifier)).replace(/\.js$/, '.ts');
      if (known.has(target)) targets.add(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** The same graph between the top-level folders of the tree (`http`, `model`, …; a file at the top is its own node). */
export function folderGraph(graph: ImportGraph): ImportGraph {
  const folder = (file: string) => file.split(sep)[0];
  const folders: ImportGraph = new Map();
  for (const [file, targets] of graph) {
    const from = folder(file);
    const edges = folders.get(from) ?? new Set<string>();
    for (const target of targets) if (folder(target) !== from) edges.add(folder(target));
    folders.set(from, edges);
  }
  return folders;
}

/** Every circle of the graph, as its members in import order (Tarjan's strongly connected components). */
export function findCircles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  let next = 0;
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(node, Math.min(low.get(node)!, index.get(target)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const members: string[] = [];
    for (let member = stack.pop()!; ; member = stack.pop()!) {
      onStack.delete(member);
      members.push(member);
      if (member === node) break;
    }
    if (members.length > 1 || graph.get(node)?.has(node)) circles.push(members.reverse());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return circles;
}

function listTypeScript(root: string, under = ''): string[] {
  return readdirSync(join(root, under), { withFileTypes: true }).flatMap((entry) => {
    const path = join(under, entry.name);
    if (entry.isDirectory()) return listTypeScript(root, path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const graph = readImportGraph(fileURLToPath(new URL('../src', import.meta.url)));
  const folders = folderGraph(graph);
  for (const [folder, targets] of [...folders].sort()) console.log(`${folder} → ${[...targets].sort().join(', ') || '(nothing)'}`);
  const circles = [...findCircles(graph), ...findCircles(folders)];
  for (const circle of circles) console.log(`circle: ${circle.join(' → ')} → ${circle[0]}`);
  console.log(circles.length === 0 ? `no circles among ${graph.size} files and ${folders.size} folders` : `${circles.length} circle(s)`);
  process.exitCode = circles.length === 0 ? 0 : 1;
}
