import { describe, expect, it } from 'vitest';
import { jobOrder, tookTurn, type Turns } from '../../src/jobs/job-turns.js';

/** Which job gets each of the next `n` turns, when every job always has an item waiting. */
function turns(open: { id: string; userTokenId: string }[], n: number): string[] {
  const state: Turns = { lastJobOf: new Map() };
  const taken: string[] = [];
  for (let turn = 0; turn < n; turn++) {
    const job = jobOrder(open, state)[0];
    tookTurn(state, job);
    taken.push(job.id);
  }
  return taken;
}

describe('the runner\'s turns', () => {
  it('alternates between tokens however many jobs each has, and between each token\'s jobs', () => {
    const open = [
      { id: 'a1', userTokenId: 'a' },
      { id: 'a2', userTokenId: 'a' },
      { id: 'a3', userTokenId: 'a' },
      { id: 'b1', userTokenId: 'b' },
    ];
    expect(turns(open, 6)).toEqual(['a1', 'b1', 'a2', 'b1', 'a3', 'b1']);
  });

  it('puts every open job in the order, so that a job with nothing waiting is passed over', () => {
    const open = [
      { id: 'a1', userTokenId: 'a' },
      { id: 'b1', userTokenId: 'b' },
      { id: 'b2', userTokenId: 'b' },
    ];
    const order = jobOrder(open, { lastToken: 'a', lastJobOf: new Map([['b', 'b1']]) });
    expect(order.map((job) => job.id)).toEqual(['b2', 'b1', 'a1']);
  });
});
