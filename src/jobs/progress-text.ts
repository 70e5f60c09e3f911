/** A job's progress as both the API's JSON and the SDK carry it, in the SDK's names. */
export interface ProgressFigures {
  imagesPerMinute: number;
  estimatedFinishAt: string | null;
  pace: 'all_passes' | 'minimum_share';
  minimumShare: number;
}

/**
 * Where an unfinished job stands, in words, for `cutout jobs show` and the Batch page: its pace
 * over the last minutes and its estimated end, and whether it takes every pass or waits behind
 * requests at its minimum share.
 *
 * @example progressText({ imagesPerMinute: 12, estimatedFinishAt: '2026-11-28T14:05:00Z', pace: 'all_passes', minimumShare: 0.1 })
 */
export function progressText(progress: ProgressFigures): string {
  const pace = progress.imagesPerMinute > 0 ? `${progress.imagesPerMinute} images a minute over the last 5 minutes` : 'no image ended in the last 5 minutes';
  const end = progress.estimatedFinishAt ? `; done about ${progress.estimatedFinishAt.slice(11, 16)} UTC at that pace` : '';
  const share = Math.max(1, Math.round(1 / progress.minimumShare));
  const why =
    progress.pace === 'minimum_share'
      ? progress.minimumShare > 0
        ? `. Requests keep the server busy: jobs get their minimum share, one model pass in ${share}.`
        : '. Requests keep the server busy, and jobs get only the passes they leave (CUTOUT_JOB_MIN_SHARE is 0).'
      : '. Jobs take every pass the server has.';
  return `${pace}${end}${why}`;
}
