import sharp from 'sharp';
import type { RawImage } from '../image/raw-image.js';
import type { AnswerSpec } from './answer-spec.js';
import { extractBox, placeInFrame, visibleBox } from './frame.js';

/**
 * remove.bg's `scale` and `position`: the subject (the box of the visible pixels) laid on a
 * transparent canvas of the cut-out's own size, scaled (up or down) so that it fills at most
 * `scale` of the canvas's width and height, its aspect ratio kept, and placed at `position`,
 * a fraction of the room left on each axis (0 = left or top, 0.5 = centred, 1 = right or
 * bottom). Without `position` it keeps its centre where it was, within the canvas; without
 * `scale` it keeps its size. A cut-out with nothing visible comes back as it is.
 *
 * @example await placeSubject(cutout, { scale: 0.8, position: { x: 0.5, y: 0.5 } })
 */
export async function placeSubject(cutout: RawImage, placement: NonNullable<AnswerSpec['placement']>): Promise<RawImage> {
  const subjectBox = visibleBox(cutout);
  if (!subjectBox) return cutout;
  const { width, height } = cutout;
  const fit = placement.scale === undefined ? 1 : Math.min((placement.scale * width) / subjectBox.width, (placement.scale * height) / subjectBox.height);
  const newWidth = Math.max(1, Math.min(width, Math.round(subjectBox.width * fit)));
  const newHeight = Math.max(1, Math.min(height, Math.round(subjectBox.height * fit)));
  let subject = extractBox(cutout, subjectBox);
  if (newWidth !== subject.width || newHeight !== subject.height) {
    // sharp premultiplies by the alpha while it resamples, so no invisible colour bleeds in.
    const { data, info } = await sharp(subject.data, { raw: { width: subject.width, height: subject.height, channels: 4 } })
      .resize(newWidth, newHeight, { fit: 'fill' })
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
    subject = { data, width: info.width, height: info.height, channels: 4 };
  }
  const at = (fraction: number | undefined, centre: number, size: number, room: number) =>
    fraction === undefined ? Math.min(Math.max(0, Math.round(centre - size / 2)), room - size) : Math.round(fraction * (room - size));
  const left = at(placement.position?.x, subjectBox.left + subjectBox.width / 2, newWidth, width);
  const top = at(placement.position?.y, subjectBox.top + subjectBox.height / 2, newHeight, height);
  return placeInFrame(subject, { left, top }, { left: 0, top: 0, width, height });
}
