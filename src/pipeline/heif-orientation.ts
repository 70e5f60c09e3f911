/**
 * Which way up an HEIC/HEIF photo stands. HEIF turns and mirrors an image with its own
 * properties (`irot`, `imir`), which libheif applies while it decodes, and phones that write
 * them also keep an EXIF Orientation that says the same thing: applying both would turn the
 * photo twice. A file made from a JPEG by older encoders (libheif's own heif-enc before 1.16
 * among them) has the EXIF Orientation alone, and then it is the only word on the matter, as
 * it is for a JPEG. So: the EXIF Orientation counts only in a file with neither property.
 *
 * @example heifExifOrientation(iphonePhoto, exif) // 1: the photo's irot already turned it
 */
export function heifExifOrientation(heif: Uint8Array, exif: Uint8Array | undefined): number {
  if (!exif || hasHeifTransform(heif)) return 1;
  return exifOrientation(exif);
}

/** True when the file's item properties (`meta` › `iprp` › `ipco`) include a rotation or a mirroring. */
export function hasHeifTransform(heif: Uint8Array): boolean {
  const meta = childBox(heif, 0, heif.length, 'meta');
  // `meta` is a full box: 4 bytes of version and flags before its children.
  const iprp = meta && childBox(heif, meta.start + 4, meta.end, 'iprp');
  const ipco = iprp && childBox(heif, iprp.start, iprp.end, 'ipco');
  if (!ipco) return false;
  for (const box of boxes(heif, ipco.start, ipco.end)) if (box.type === 'irot' || box.type === 'imir') return true;
  return false;
}

/**
 * The Orientation (1 to 8) in an EXIF block: a TIFF structure, which HEIF's Exif item and
 * some readers put behind a few bytes of their own (an offset, `Exif\0\0`), so the TIFF
 * header is looked for near the start. 1 when there is none or it cannot be read.
 */
export function exifOrientation(exif: Uint8Array): number {
  const view = new DataView(exif.buffer, exif.byteOffset, exif.byteLength);
  for (let tiff = 0; tiff <= Math.min(16, exif.length - 8); tiff++) {
    const order = view.getUint16(tiff);
    const little = order === 0x4949;
    if ((order !== 0x4949 && order !== 0x4d4d) || view.getUint16(tiff + 2, little) !== 42) continue;
    const ifd = tiff + view.getUint32(tiff + 4, little);
    if (ifd + 2 > exif.length) return 1;
    const entries = view.getUint16(ifd, little);
    for (let i = 0; i < entries; i++) {
      const entry = ifd + 2 + 12 * i;
      if (entry + 12 > exif.length) return 1;
      // Tag 0x0112, type SHORT: the value sits in the entry itself.
      if (view.getUint16(entry, little) === 0x0112 && view.getUint16(entry + 2, little) === 3) {
        const value = view.getUint16(entry + 8, little);
        return value >= 1 && value <= 8 ? value : 1;
      }
    }
    return 1;
  }
  return 1;
}

interface Box {
  type: string;
  /** Where its contents start and end. */
  start: number;
  end: number;
}

/** The ISO-BMFF boxes between `from` and `to`, stopping at the first that does not fit. */
function* boxes(bytes: Uint8Array, from: number, to: number): Generator<Box> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = from;
  while (at + 8 <= to) {
    let size = view.getUint32(at);
    let header = 8;
    if (size === 1) {
      if (at + 16 > to) return;
      size = Number(view.getBigUint64(at + 8));
      header = 16;
    } else if (size === 0) {
      size = to - at;
    }
    if (size < header || at + size > to) return;
    yield { type: String.fromCharCode(...bytes.subarray(at + 4, at + 8)), start: at + header, end: at + size };
    at += size;
  }
}

function childBox(bytes: Uint8Array, from: number, to: number, type: string): Box | undefined {
  for (const box of boxes(bytes, from, to)) if (box.type === type) return box;
  return undefined;
}
