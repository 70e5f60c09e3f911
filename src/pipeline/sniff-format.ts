/**
 * The image formats sharp decodes for Cutout; HEIC/HEIF is read before them, by
 * `heic-thread.ts` ({@link isHeif}); everything else (SVG, PDF, …) is refused.
 */
export type ImageFormat = 'jpeg' | 'png' | 'webp' | 'gif' | 'tiff' | 'avif';

const ascii = (bytes: Uint8Array, from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to));

/**
 * Names the format of an image from its first bytes (its signature), never from a file
 * name or Content-Type. Returns undefined for anything Cutout does not accept, so that
 * text, SVG, PDF or archives never reach a decoder.
 *
 * @example sniffImageFormat(Buffer.from([0xff, 0xd8, 0xff, 0xe0])) // 'jpeg'
 */
export function sniffImageFormat(bytes: Uint8Array): ImageFormat | undefined {
  if (bytes.length < 12) return undefined;
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  if (ascii(bytes, 0, 8) === '\x89PNG\r\n\x1a\n') return 'png';
  if (ascii(bytes, 0, 6) === 'GIF87a' || ascii(bytes, 0, 6) === 'GIF89a') return 'gif';
  if (ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 12) === 'WEBP') return 'webp';
  if (ascii(bytes, 0, 4) === 'II*\0' || ascii(bytes, 0, 4) === 'MM\0*') return 'tiff';
  // ISO-BMFF: [size]["ftyp"][major brand]…; AVIF is brand avif (still) or avis (sequence).
  if (ascii(bytes, 4, 8) === 'ftyp') {
    const boxSize = Math.min(new DataView(bytes.buffer, bytes.byteOffset).getUint32(0), bytes.length);
    for (let at = 8; at + 4 <= boxSize; at += 4) {
      if (at === 12) continue; // minor version, not a brand
      const brand = ascii(bytes, at, at + 4);
      if (brand === 'avif' || brand === 'avis') return 'avif';
    }
  }
  return undefined;
}

/** The major or compatible brands of an HEVC-coded HEIF file (what phones write), and of HEIF in general. */
const HEIF_BRANDS = new Set(['heic', 'heix', 'heim', 'heis', 'hevc', 'hevx', 'hevm', 'hevs', 'mif1', 'msf1']);

/**
 * True for an HEIC/HEIF image (an ISO-BMFF file whose brands name HEIF) that is not AVIF,
 * which sharp reads itself ({@link sniffImageFormat}).
 *
 * @example isHeif(iphonePhoto) // true
 */
export function isHeif(bytes: Uint8Array): boolean {
  if (bytes.length < 12 || ascii(bytes, 4, 8) !== 'ftyp' || sniffImageFormat(bytes) === 'avif') return false;
  const boxSize = Math.min(new DataView(bytes.buffer, bytes.byteOffset).getUint32(0), bytes.length);
  for (let at = 8; at + 4 <= boxSize; at += 4) {
    if (at !== 12 && HEIF_BRANDS.has(ascii(bytes, at, at + 4))) return true;
  }
  return false;
}
