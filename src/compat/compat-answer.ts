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
