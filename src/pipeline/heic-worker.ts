/**
 * The HEIC thread: decodes HEIC/HEIF photos (what phones upload) with libheif compiled to
 * WebAssembly (the `heic-decode` package; nothing is downloaded), which holds its thread for
 * a second or more at 12 megapixels, so never the event loop's. The first image of the file
 * is decoded with its rotation and mirroring applied (HEIF's `irot`/`imir`, where phones put
 * the orientation), then written as an uncompressed TIFF, RGB, or RGBA when it has
 * transparency, which the pipeline's decode then reads like any other upload. A file with an
 * EXIF Orientation and neither property (`heif-orientation.ts`) passes it on in the TIFF's
 * header, so that the decode turns it as it turns a JPEG.
 * Messages: `heic-protocol.ts`.
 */
import { parentPort } from 'node:worker_threads';
import decodeHeic from 'heic-decode';
import sharp from 'sharp';
import { CutoutError } from '../errors.js';
import { wholeBuffer } from '../image/raw-image.js';
import { reportReady } from '../threads/start-worker-thread.js';
import { toThreadError } from '../threads/thread-error.js';
import { heifExifOrientation } from './heif-orientation.js';
import type { HeicRequest, HeicResult } from './heic-protocol.js';

const port = parentPort;
if (!port) throw new Error('heic-worker must run as a worker thread');
// libheif's bindings print every decoding failure with console.log; each is answered as an
// image_decode_failed, which the request's own log line reports, so these would only repeat it.
console.log = () => {};

async function transcode({ heic, maxPixels }: HeicRequest): Promise<Uint8Array> {
  let images: Awaited<ReturnType<typeof decodeHeic.all>>;
  try {
    images = await decodeHeic.all({ buffer: heic });
  } catch (error) {
    throw new CutoutError('image_decode_failed', 'The HEIC image could not be decoded; it may be corrupt or truncated.', { cause: error });
  }
  try {
    const [first] = images;
    if (first.width * first.height > maxPixels) throw new CutoutError('too_many_pixels', `The image has more than ${maxPixels} pixels.`);
    const { width, height, data } = await first.decode().catch((error: unknown) => {
      throw new CutoutError('image_decode_failed', 'The HEIC image could not be decoded; it may be corrupt or truncated.', { cause: error });
    });
    const rgba = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    let opaque = true;
    for (let j = 3; j < rgba.length && opaque; j += 4) opaque = rgba[j] === 255;
    const image = sharp(rgba, { raw: { width, height, channels: 4 } });
    const orientation = heifExifOrientation(heic, await exifOf(heic));
    const oriented = orientation === 1 ? image : image.withMetadata({ orientation });
    return await (opaque ? oriented.removeAlpha() : oriented).tiff({ compression: 'none' }).toBuffer();
  } finally {
    images.dispose();
  }
}

/** The file's EXIF block, read from its header by sharp (whose libheif parses HEIF though it cannot decode HEVC), if it has one. */
async function exifOf(heic: Uint8Array): Promise<Uint8Array | undefined> {
  try {
    return (await sharp(heic).metadata()).exif;
  } catch {
    // A header sharp cannot read: libheif decoded the pixels, so the photo is taken as it stands.
    return undefined;
  }
}

port.on('message', (request: HeicRequest) => {
  transcode(request).then(
    (tiff) => {
      const moved = wholeBuffer(tiff);
      port.postMessage({ id: request.id, tiff } satisfies HeicResult, moved ? [moved as ArrayBuffer] : undefined);
    },
    (error: unknown) => port.postMessage({ id: request.id, error: toThreadError(error) } satisfies HeicResult),
  );
});
reportReady({});
