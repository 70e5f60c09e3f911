import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findCircles, folderGraph, readImportGraph } from '../../scripts/import-graph.js';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

describe('the import graph of src/', () => {
  it('has no circle among its files', () => {
    expect(findCircles(readImportGraph(SRC))).toEqual([]);
  });

  it('has no folder that imports from a folder importing it back', () => {
    expect(findCircles(folderGraph(readImportGraph(SRC)))).toEqual([]);
  });

  it('finds a circle between files, and between folders, when there is one', async () => {
    const root = await mkdtemp(join(tmpdir(), 'cutout-imports-'));
    try {
      await mkdir(join(root, 'model'));
      await mkdir(join(root, 'pipeline'));
      await writeFile(join(root, 'model/worker.ts'), "import { toMask } from '../pipeline/tensor.js';\n");
      await writeFile(join(root, 'pipeline/tensor.ts'), "import type {\n  Segmenter,\n} from '../model/segmenter.js';\n");
      await writeFile(join(root, 'model/segmenter.ts'), "export interface Segmenter {}\nconst later = () => import('./worker.js');\n");
      const graph = readImportGraph(root);
      expect(findCircles(graph).map((circle) => circle.sort())).toEqual([['model/segmenter.ts', 'model/worker.ts', 'pipeline/tensor.ts']]);
      expect(findCircles(folderGraph(graph)).map((circle) => circle.sort())).toEqual([['model', 'pipeline']]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
