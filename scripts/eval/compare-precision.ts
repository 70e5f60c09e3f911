/**
 * The int8 model's quality targets against float32, read off two `npm run eval -- --json` reports made on the same
 * fixtures, one with the float32 model and one with the int8 model:
 *
 *   npm run eval -- --precision fp32 --json fp32.json && npm run eval -- --precision int8 --json int8.json
 *   npm run eval -- --compare fp32.json int8.json
 *
 * Binary folders (GrabCut) are compared on their main set (ambiguous pairs left out, as the
 * eval's own means do), soft ones (matting) on all their images; the refined mode when the
 * reports have it (what users get), else the raw one.
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { FolderResult, ImageResult } from './report.js';

interface Report {
  model: string;
  modes: string[];
  folders: FolderResult[];
}

/** The wanted bounds: int8 may be at most this much worse than float32. */
const TARGETS = { meanIou: 0.003, boundaryF: 0.01, mattingMae: 0.005, worstIouDrop: 0.02 };

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');

/** Prints the comparison and returns 0 when every target holds, 1 otherwise. */
export async function comparePrecision(fp32File: string, int8File: string): Promise<number> {
  const [a, b] = await Promise.all([fp32File, int8File].map(async (file) => JSON.parse(await readFile(file, 'utf8')) as Report));
  const mode = a.modes.includes('refined') && b.modes.includes('refined') ? 'refined' : 'raw';
  console.log(`float32: ${a.model} (${fp32File})\nint8:    ${b.model} (${int8File})\nmode: ${mode}\n`);
  console.log('| folder | measure | float32 | int8 | int8 − float32 | wanted | result |\n| --- | --- | --- | --- | --- | --- | --- |');
  let failed = 0;
  const row = (folder: string, measure: string, x: number, y: number, wanted: string, ok: boolean) => {
    failed += ok ? 0 : 1;
    console.log(`| ${folder} | ${measure} | ${x.toFixed(4)} | ${y.toFixed(4)} | ${(y - x >= 0 ? '+' : '') + (y - x).toFixed(4)} | ${wanted} | ${verdict(ok)} |`);
  };
  for (const folderA of a.folders) {
    const folderB = b.folders.find((f) => f.dir === folderA.dir);
    if (!folderB) continue;
    const name = basename(folderA.dir);
    const byName = new Map(folderB.images.map((image) => [image.name, image]));
    const pairs = folderA.images
      .filter((image) => !image.error && !(folderA.kind === 'binary' && image.ambiguous))
      .map((image) => [image, byName.get(image.name)] as const)
      .filter((pair): pair is readonly [ImageResult, ImageResult] => pair[1] !== undefined && !pair[1].error);
    const scores = (image: ImageResult) => image.modes[mode as 'raw' | 'refined']!;
    if (folderA.kind === 'binary') {
      const iou = pairs.map(([x, y]) => [scores(x).binary!.iou, scores(y).binary!.iou]);
      const boundary = pairs.map(([x, y]) => [scores(x).binary!.boundaryF, scores(y).binary!.boundaryF]);
      const [iouA, iouB] = [mean(iou.map((p) => p[0])), mean(iou.map((p) => p[1]))];
      row(name, `mean IoU (${pairs.length} images)`, iouA, iouB, `≥ −${TARGETS.meanIou}`, iouB - iouA >= -TARGETS.meanIou);
      const [bfA, bfB] = [mean(boundary.map((p) => p[0])), mean(boundary.map((p) => p[1]))];
      row(name, 'boundary F (3 px)', bfA, bfB, `≥ −${TARGETS.boundaryF}`, bfB - bfA >= -TARGETS.boundaryF);
      const drops = pairs.map(([x], i) => ({ name: x.name, fp32: iou[i][0], int8: iou[i][1], drop: iou[i][0] - iou[i][1] })).sort((p, q) => q.drop - p.drop);
      const worst = drops[0];
      row(name, `worst image's IoU (${worst.name})`, worst.fp32, worst.int8, `≥ −${TARGETS.worstIouDrop}`, worst.drop <= TARGETS.worstIouDrop);
      console.log(`|  | largest IoU drops | ${drops.slice(0, 5).map((d) => `${d.name} ${d.drop.toFixed(4)}`).join(', ')} |  |  |  |  |`);
    } else {
      const mae = pairs.map(([x, y]) => [scores(x).soft!.mae, scores(y).soft!.mae]);
      const [maeA, maeB] = [mean(mae.map((p) => p[0])), mean(mae.map((p) => p[1]))];
      row(name, `matting MAE (${pairs.length} images; lower is better)`, maeA, maeB, `≤ +${TARGETS.mattingMae}`, maeB - maeA <= TARGETS.mattingMae);
    }
  }
  console.log(failed === 0 ? '\nevery quality target met' : `\n${failed} target(s) missed`);
  return failed === 0 ? 0 : 1;
}
