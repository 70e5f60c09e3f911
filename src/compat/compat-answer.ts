/**
 * Whether a remove.bg client asked for the JSON answer: `Accept` names application/json with
 * a higher preference (q) than any image type. No Accept, `*∕*` and `image/*` get the image's
 * own bytes, as remove.bg answers them.
 *
 * @example wantsJson('application/json') // true
 */
export function wantsJson(accept: string | undefined): boolean {
  let json = 0;
  let image = 0;
  for (const range of (accept ?? '').split(',')) {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    const q = Number(parameters.find((p) => p.startsWith('q='))?.slice(2) ?? 1);
    if (!(q > 0)) continue;
    if (type === 'application/json') json = Math.max(json, q);
    else if (type.startsWith('image/')) image = Math.max(image, q);
  }
  return json > image;
}

/** The subject's box, as the JSON answer's `foreground_*` fields. */
export interface ForegroundFields {
  foreground_top: number;
  foreground_left: number;
  foreground_width: number;
  foreground_height: number;
}

/**
 * remove.bg's JSON answer: `{"data": {"result_b64", "foreground_top", "foreground_left",
 * "foreground_width", "foreground_height"}}` (the box is 0s when nothing was found).
 */
export function removeBgJson(bytes: Buffer, foreground: { top: number; left: number; width: number; height: number } | undefined): string {
  const box = foreground ?? { top: 0, left: 0, width: 0, height: 0 };
  return JSON.stringify({
    data: { result_b64: bytes.toString('base64'), foreground_top: box.top, foreground_left: box.left, foreground_width: box.width, foreground_height: box.height },
  });
}
