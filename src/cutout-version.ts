import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The version in Cutout's package.json, the nearest one named `cutout` above `from`: read
 * rather than imported, since package.json lies outside the compiled tree, and searched for
 * because that tree is not always one folder down (dist/, and the benchmarks' bench/.build/).
 */
export function readCutoutVersion(from: string | URL = import.meta.url): string {
  let dir = dirname(fileURLToPath(from));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'cutout' && manifest.version) return manifest.version;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json named cutout above ${fileURLToPath(from)}`);
    dir = parent;
  }
}

/** Cutout's version: the API reference shows it (`info.version` of the OpenAPI document). */
export const CUTOUT_VERSION: string = readCutoutVersion();
