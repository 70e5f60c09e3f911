/**
 * Makes the turned photos of test/fixtures/heic (kept in the repository, so the tests need no
 * encoder): the test's ball photo, 320 × 240 upright, stored turned on its side, three ways.
 *
 * - `orientation-6.jpg`: a JPEG whose EXIF Orientation (6) turns it upright;
 * - `orientation-6-exif.heic`: that JPEG through libheif's heif-enc (1.15), which keeps the
 *   EXIF Orientation and writes no HEIF transform, as encoders before 1.16 did;
 * - `orientation-6-irot.heic`: the same file with an `irot` of 270° anticlockwise (90°
 *   clockwise) in place of its `pixi` property, as phones write them: the transform and an
 *   EXIF Orientation that says the same, which must turn the photo once, not twice.
 *
 * Run: `npx tsx scripts/make-heic-fixtures.ts` (needs heif-enc: apt-get install libheif-examples).
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { makeSubjectPhoto } from '../test/helpers/images.js';

const folder = fileURLToPath(new URL('../test/fixtures/heic/', import.meta.url));
await mkdir(folder, { recursive: true });
const upright = await (await makeSubjectPhoto(320, 240)).png().toBuffer();
// Stored turned 90° anticlockwise; Orientation 6 says "turn 90° clockwise to show".
const { default: sharp } = await import('sharp');
const jpeg = await sharp(upright).rotate(270).jpeg({ quality: 90 }).withMetadata({ orientation: 6 }).toBuffer();
await writeFile(`${folder}orientation-6.jpg`, jpeg);
await promisify(execFile)('heif-enc', ['-q', '90', '-o', `${folder}orientation-6-exif.heic`, `${folder}orientation-6.jpg`]);

// heif-enc 1.15 writes pixi last among the item properties: 16 bytes that become an irot
// (its angle in the first byte, the rest padding that libheif skips), keeping every offset.
const heic = Buffer.from(await readFile(`${folder}orientation-6-exif.heic`));
const pixi = heic.indexOf('pixi') - 4;
if (pixi < 0 || heic.readUInt32BE(pixi) !== 16 || heic.indexOf('ipma') !== pixi + 16 + 4) throw new Error('heif-enc wrote another layout than 1.15 does: pixi is not the 16-byte last property');
heic.write('irot', pixi + 4, 'latin1');
heic.fill(0, pixi + 8, pixi + 16);
heic[pixi + 8] = 3;
await writeFile(`${folder}orientation-6-irot.heic`, heic);
process.stdout.write(`wrote ${folder}orientation-6.jpg, orientation-6-exif.heic, orientation-6-irot.heic\n`);
