/** An unfinished job, as the runner's turns see it. */
export interface OpenJob {
  id: string;
  userTokenId: string;
}

/** Who had the last turn: the token, and for each token the job it last took an item from. */
export interface Turns {
  lastToken?: string;
  lastJobOf: Map<string, string>;
}

/**
 * The order in which the runner tries the open jobs for its next item: tokens take turns
 * (the one after the last served, in a fixed order), and within a token its jobs take
 * turns, so that a token with a large job, or many jobs, does not hold back another's. The
 * caller takes the first job in the list that still has a queued item.
 *
 * @example jobOrder([{ id: 'a', userTokenId: 't1' }, { id: 'b', userTokenId: 't2' }], { lastToken: 't1', lastJobOf: new Map() }) // b, a
 */
export function jobOrder(open: readonly OpenJob[], turns: Turns): OpenJob[] {
  const byToken = new Map<string, OpenJob[]>();
  for (const job of open) {
    const jobs = byToken.get(job.userTokenId);
    if (jobs) jobs.push(job);
    else byToken.set(job.userTokenId, [job]);
  }
  const tokens = rotateAfter([...byToken.keys()].sort(), turns.lastToken);
  return tokens.flatMap((token) => rotateAfter(byToken.get(token)!, turns.lastJobOf.get(token), (job) => job.id));
}

/** Records that `job` had a turn. */
export function tookTurn(turns: Turns, job: OpenJob): void {
  turns.lastToken = job.userTokenId;
  turns.lastJobOf.set(job.userTokenId, job.id);
}

/** The list starting just after `last` (or from its start when `last` is not in it). */
function rotateAfter<T>(list: readonly T[], last: string | undefined, key: (entry: T) => string = String): T[] {
  const at = last === undefined ? -1 : list.findIndex((entry) => key(entry) === last);
  return [...list.slice(at + 1), ...list.slice(0, at + 1)];
}
