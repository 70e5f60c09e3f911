import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { basename, dirname, extname, join, relative, resolve } from 'node:path';
import sharp from 'sharp';
import { UNLABELLED } from './metrics.js';

/** One photo and its ground truth, matched by base name. */
export interface LabelledPair {
  /** Base name shared by the image and the mask, e.g. `106024`. */
  name: string;
  imagePath: string;
  maskPath: string;
  /** From the manifest's `ambiguous_for_bg_removal` column; false when the pair is not listed. */
  ambiguous: boolean;
  /** From the manifest's `synthetic` column (a composite or a crop made for testing, not a photo as taken); false when absent. */
  synthetic: boolean;
  /** The manifest's `notes` for the pair, if any. */
  note: string;
}

/** A folder's pairs and what did not pair up. */
export interface LabelledFolder {
  dir: string;
  pairs: LabelledPair[];
  /** The manifest.csv found beside or above the folder, if any. */
  manifestPath: string | undefined;
  /** Files in images/ with no mask, and masks/ with no image. */
  unpaired: string[];
}

/** Ground truth as one 8-bit channel. */
export interface GreyImage {
  data: Uint8Array;
  width: number;
  height: number;
}

const IMAGE_EXTENSIONS = new Set(['.jpg', '.jpeg', '.png', '.webp', '.tif', '.tiff']);

/**
 * Pairs `DIR/images/<name>.<ext>` with `DIR/masks/<name>.<ext>` (any of jpg, png, webp, tiff on
 * either side), the layout of ../shared/fixtures/labelled/{grabcut,matting}. Reads
 * `ambiguous_for_bg_removal` and `synthetic` from the first manifest.csv found in DIR or up to
 * two folders above it, whose `image` column is a path relative to the manifest.
 *
 * @example const { pairs } = await findLabelledPairs('../shared/fixtures/labelled/grabcut')
 */
export async function findLabelledPairs(dir: string): Promise<LabelledFolder> {
  const imagesDir = join(dir, 'images');
  const masksDir = join(dir, 'masks');
  if (!existsSync(imagesDir) || !existsSync(masksDir)) {
    throw new Error(`${dir} must hold images/ and masks/ (files paired by base name); it has ${existsSync(dir) ? (await readdir(dir)).join(', ') || 'nothing' : 'no such folder'}`);
  }
  const images = await listImages(imagesDir);
  const masks = await listImages(masksDir);
  const manifestPath = findManifest(dir);
  const manifest = manifestPath ? await readManifest(manifestPath) : new Map<string, Record<string, string>>();

  const pairs: LabelledPair[] = [];
  const unpaired: string[] = [];
  for (const [name, imagePath] of images) {
    const maskPath = masks.get(name);
    if (!maskPath) {
      unpaired.push(`images/${basename(imagePath)} (no mask)`);
      continue;
    }
    const row = manifest.get(resolve(imagePath));
    pairs.push({ name, imagePath, maskPath, ambiguous: row?.ambiguous_for_bg_removal === 'yes', synthetic: row?.synthetic === 'yes', note: row?.notes ?? '' });
  }
  for (const [name, maskPath] of masks) if (!images.has(name)) unpaired.push(`masks/${basename(maskPath)} (no image)`);
  pairs.sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }));
  return { dir, pairs, manifestPath, unpaired };
}

/** Binary when every mask holds only 0, 128 (unlabelled) and 255; soft mattes otherwise. */
export function decideKind(masks: GreyImage[]): { kind: 'binary' | 'soft'; reason: string } {
  let withBand = 0;
  const levels = new Set<number>();
  for (const mask of masks) {
    let band = false;
    for (const v of mask.data) {
      levels.add(v);
      if (v === UNLABELLED) band = true;
    }
    if (band) withBand++;
  }
  const other = [...levels].filter((v) => v !== 0 && v !== UNLABELLED && v !== 255);
  if (other.length === 0) {
    return { kind: 'binary', reason: `all ${masks.length} masks hold only 0/${UNLABELLED}/255; ${withBand} have the ${UNLABELLED} unlabelled band, left out of scoring` };
  }
  return { kind: 'soft', reason: `masks hold ${levels.size} grey levels, so they are scored as soft mattes` };
}

/**
 * Reads a mask or matte as one 8-bit grey channel, oriented like the pipeline orients photos.
 * Colour masks are converted to luminance; an alpha channel is ignored (the matte is the grey).
 */
export async function readGreyMask(path: string): Promise<GreyImage> {
  const { data, info } = await sharp(path)
    .autoOrient()
    .toColourspace('b-w')
    .extractChannel(0)
    .raw({ depth: 'uchar' })
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/**
 * The mask stretched to `width × height`: nearest-neighbour for binary masks so that 0/128/255
 * stay exact, sharp's default (Lanczos) for soft mattes.
 */
export async function resizeGreyMask(mask: GreyImage, width: number, height: number, binary: boolean): Promise<GreyImage> {
  const data = await sharp(mask.data, { raw: { width: mask.width, height: mask.height, channels: 1 } })
    .resize(width, height, { fit: 'fill', kernel: binary ? 'nearest' : 'lanczos3' })
    .extractChannel(0)
    .raw()
    .toBuffer();
  return { data, width, height };
}

async function listImages(dir: string): Promise<Map<string, string>> {
  const byName = new Map<string, string>();
  for (const file of (await readdir(dir)).sort()) {
    const ext = extname(file).toLowerCase();
    if (!IMAGE_EXTENSIONS.has(ext)) continue;
    const name = basename(file, extname(file));
    if (byName.has(name)) throw new Error(`${dir} holds two files named ${name}.*; keep one`);
    byName.set(name, join(dir, file));
  }
  return byName;
}

function findManifest(dir: string): string | undefined {
  let at = resolve(dir);
  for (let up = 0; up <= 2; up++, at = dirname(at)) {
    const candidate = join(at, 'manifest.csv');
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** Manifest rows keyed by the absolute path of their image. */
async function readManifest(path: string): Promise<Map<string, Record<string, string>>> {
  const [header, ...rows] = parseCsv(await readFile(path, 'utf8'));
  const byImage = new Map<string, Record<string, string>>();
  if (!header?.includes('image')) return byImage;
  for (const cells of rows) {
    const row = Object.fromEntries(header.map((column, i) => [column, cells[i] ?? '']));
    if (row.image) byImage.set(resolve(dirname(path), row.image), row);
  }
  return byImage;
}

/** RFC 4180 CSV: quoted fields may hold commas, newlines and doubled quotes. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') field += text[i++];
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      if (row.some((cell) => cell !== '')) rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  row.push(field);
  if (row.some((cell) => cell !== '')) rows.push(row);
  return rows;
}

/** `path` relative to the working directory when that is shorter, for printing. */
export function displayPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel.length < path.length ? rel : path;
}
