/**
 * The before/after pictures of docs/quality.md: a photo cut out with refine: false and with
 * refinement, a detail of each laid on white and on black, side by side and enlarged.
 *
 *   npx tsx scripts/eval/quality-pictures.ts [OUT_DIR]     (default docs/quality)
 *
 * Photos come from ../shared/fixtures (not copied into the repository; only the pictures are).
 * One is first laid over chroma green with its true matte, as in the eval's green-screen test,
 * to show the green fringe that refinement takes out.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp, { type OverlayOptions } from 'sharp';
import { assembleModel } from '../../src/model/assemble-model.js';
import { loadSegmenter } from '../../src/model/onnx-segmenter.js';
import type { Segmenter } from '../../src/model/segmenter.js';
import { FinishThread } from '../../src/pipeline/finish-thread.js';
import { removeBackground } from '../../src/pipeline/remove-background.js';
import { composeOver, SCREEN_GREEN } from './fringe.js';
import { memoSegmenter } from './memo-segmenter.js';

const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../shared/fixtures');

interface Picture {
  /** Output file name, without .png. */
  name: string;
  photo: string;
  /** Lay the photo over chroma green with this true matte first, as the eval's green-screen test does. */
  screenMatte?: string;
  /** The detail shown, in the photo's pixels, and how much it is enlarged. */
  region: { left: number; top: number; width: number; height: number };
  zoom: number;
}

const PICTURES: Picture[] = [
  { name: 'portrait-hair', photo: 'photos/test_human_images/julia+trotti_17.jpg', region: { left: 760, top: 400, width: 260, height: 200 }, zoom: 2 },
  { name: 'gt05-collar', photo: 'labelled/matting/images/GT05.jpg', region: { left: 400, top: 262, width: 150, height: 100 }, zoom: 3 },
  {
    name: 'gt05-green-screen',
    photo: 'labelled/matting/images/GT05.jpg',
    screenMatte: 'labelled/matting/masks/GT05.png',
    region: { left: 400, top: 262, width: 150, height: 100 },
    zoom: 3,
  },
];

const LABEL_HEIGHT = 26;
const GAP = 6;

const outDir = resolve(process.argv[2] ?? 'docs/quality');
await mkdir(outDir, { recursive: true });
const modelPath = process.env.CUTOUT_MODEL_PATH ?? (await assembleModel(process.env.CUTOUT_DATA_DIR ?? './data'));
const segmenter = memoSegmenter(await loadSegmenter(modelPath, { threads: availableParallelism() }));
const finisher = new FinishThread();
try {
  for (const picture of PICTURES) await draw(picture, segmenter, finisher);
} finally {
  await segmenter.close();
  await finisher.close();
}

async function draw(picture: Picture, segmenter: Segmenter, finisher: FinishThread): Promise<void> {
  const bytes = picture.screenMatte ? await overGreen(join(FIXTURES, picture.photo), join(FIXTURES, picture.screenMatte)) : await readFile(join(FIXTURES, picture.photo));
  const { region, zoom } = picture;
  const tileWidth = region.width * zoom;
  const tileHeight = region.height * zoom;
  const tiles: OverlayOptions[] = [];
  const rows = [
    { label: 'raw (refine: false)', refine: false },
    { label: 'refined (default)', refine: true },
  ];
  const backgrounds = [
    { label: 'on white', colour: '#ffffff' },
    { label: 'on black', colour: '#000000' },
  ];
  for (const [row, mode] of rows.entries()) {
    const { bytes: png } = await removeBackground(bytes, { segmenter, finisher, maxPixels: 1e9, refine: mode.refine });
    const detail = await sharp(png).extract(region).toBuffer();
    for (const [column, background] of backgrounds.entries()) {
      const laid = await sharp({ create: { width: region.width, height: region.height, channels: 3, background: background.colour } })
        .composite([{ input: detail }])
        .png()
        .toBuffer();
      const enlarged = await sharp(laid).resize(tileWidth, tileHeight, { kernel: 'nearest' }).png().toBuffer();
      const left = column * (tileWidth + GAP);
      const top = row * (tileHeight + LABEL_HEIGHT + GAP);
      tiles.push({ input: label(`${mode.label}, ${background.label}`, tileWidth), left, top }, { input: enlarged, left, top: top + LABEL_HEIGHT });
    }
  }
  const width = 2 * tileWidth + GAP;
  const height = 2 * (tileHeight + LABEL_HEIGHT) + GAP;
  const file = join(outDir, `${picture.name}.png`);
  await sharp({ create: { width, height, channels: 3, background: '#808080' } }).composite(tiles).png({ compressionLevel: 9 }).toFile(file);
  console.log(`${file}: ${picture.photo} ${region.width}×${region.height} at (${region.left}, ${region.top}), ×${zoom}`);
}

/** The photo laid over chroma green with the matte, as a PNG. */
async function overGreen(photo: string, matte: string): Promise<Buffer> {
  const { data, info } = await sharp(photo).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const alpha = await sharp(matte).resize(info.width, info.height, { fit: 'fill' }).extractChannel(0).raw().toBuffer();
  return sharp(composeOver(data, alpha, SCREEN_GREEN), { raw: { width: info.width, height: info.height, channels: 3 } }).png().toBuffer();
}

function label(text: string, width: number): Buffer {
  const escaped = text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  return Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${LABEL_HEIGHT}"><rect width="100%" height="100%" fill="#808080"/>` +
      `<text x="6" y="18" font-family="sans-serif" font-size="15" fill="#ffffff">${escaped}</text></svg>`,
  );
}
