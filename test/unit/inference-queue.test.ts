import { describe, expect, it } from 'vitest';
import { InferenceQueue, MAX_OVERTAKES } from '../../src/inference/inference-queue.js';

describe('InferenceQueue.idle', () => {
  it('is true only while a new job would start at once', async () => {
    const queue = new InferenceQueue({ concurrency: 1, maxQueued: 4 });
    expect(queue.idle).toBe(true);
    let release!: () => void;
    const first = queue.run(() => new Promise<void>((resolve) => (release = resolve)));
    expect(queue.idle).toBe(false); // the one slot is taken
    const second = queue.run(async () => {});
    expect(queue.queued).toBe(1);
    release();
    await Promise.all([first, second]);
    expect(queue.idle).toBe(true);
  });
});

describe('InferenceQueue.claim', () => {
  it('gives the idle model to the first claimant only, until it is released', async () => {
    const queue = new InferenceQueue({ concurrency: 1, maxQueued: 4 });
    const release = queue.claim();
    expect(release).toBeTypeOf('function');
    expect(queue.idle).toBe(false);
    expect(queue.claim()).toBeUndefined(); // a burst's second image waits for its turn
    release!();
    release!(); // a second release changes nothing
    expect(queue.idle).toBe(true);
    expect(queue.claim()).toBeTypeOf('function');
    expect(queue.claim()).toBeUndefined(); // the double release did not free a second slot
  });

  it('is refused while the model runs, and does not hold back run for other jobs', async () => {
    const queue = new InferenceQueue({ concurrency: 1, maxQueued: 4 });
    const release = queue.claim();
    await expect(queue.run(async () => 'ran')).resolves.toBe('ran');
    release!();
    let finish!: () => void;
    const running = queue.run(() => new Promise<void>((resolve) => (finish = resolve)));
    expect(queue.claim()).toBeUndefined();
    finish();
    await running;
    expect(queue.claim()).toBeTypeOf('function');
  });
});

describe('InferenceQueue.run with large photos', () => {
  /** Runs the named images on a queue of one slot, the first holding it until all wait; returns the order they ran in. */
  async function order(images: { name: string; large: boolean }[]): Promise<string[]> {
    const queue = new InferenceQueue({ concurrency: 1, maxQueued: 20 });
    const ran: string[] = [];
    let release!: () => void;
    const blocker = queue.run(() => new Promise<void>((resolve) => (release = resolve)));
    const all = images.map(({ name, large }) => queue.run(async () => void ran.push(name), undefined, { large }));
    release();
    await Promise.all([blocker, ...all]);
    return ran;
  }
  const L = (name: string) => ({ name, large: true });
  const S = (name: string) => ({ name, large: false });

  it('lets a small photo past the large ones waiting before it', async () => {
    expect(await order([L('L1'), L('L2'), S('s1')])).toEqual(['s1', 'L1', 'L2']);
  });

  it('keeps arrival order among small photos and among large ones', async () => {
    expect(await order([S('s1'), L('L1'), S('s2'), L('L2')])).toEqual(['s1', 's2', 'L1', 'L2']);
    expect(await order([L('L1'), L('L2')])).toEqual(['L1', 'L2']);
  });

  it(`lets a large photo be overtaken at most ${MAX_OVERTAKES} times`, async () => {
    const smalls = Array.from({ length: MAX_OVERTAKES + 2 }, (_, i) => S(`s${i + 1}`));
    const ran = await order([L('L1'), ...smalls]);
    expect(ran.indexOf('L1')).toBe(MAX_OVERTAKES);
    expect(ran.filter((name) => name !== 'L1')).toEqual(smalls.map((s) => s.name));
  });

  it('leaves the line as it is when nothing is large', async () => {
    expect(await order([S('s1'), S('s2'), S('s3')])).toEqual(['s1', 's2', 's3']);
  });
});

describe('InferenceQueue with a job share', () => {
  /** Runs requests and job images on a queue of one slot, a request holding it until all wait; returns the order they ran in. */
  async function order(jobShare: number, names: string[]): Promise<string[]> {
    const queue = new InferenceQueue({ concurrency: 1, maxQueued: 6, jobShare });
    const ran: string[] = [];
    let release!: () => void;
    const blocker = queue.run(() => new Promise<void>((resolve) => (release = resolve)));
    const all = names.map((name) => (name.startsWith('J') ? queue.jobSlot : queue).run(async () => void ran.push(name)).catch((error: Error) => void ran.push(`${name}:${error.message.slice(0, 20)}`)));
    expect(queue.jobWaitsForShare).toBe(names.some((name) => name.startsWith('J')));
    release();
    await Promise.all([blocker, ...all]);
    return ran;
  }

  it('gives jobs one pass in round(1 / share) while requests wait, and every pass once none does', async () => {
    expect(await order(0.25, ['R1', 'R2', 'R3', 'J1', 'J2', 'R4', 'R5', 'R6'])).toEqual(['R1', 'R2', 'R3', 'J1', 'R4', 'R5', 'R6', 'J2']);
    expect(await order(0.5, ['J1', 'J2', 'J3', 'R1', 'R2'])).toEqual(['R1', 'J1', 'R2', 'J2', 'J3']);
  });

  it('with a share of 0, gives jobs only the passes requests leave', async () => {
    expect(await order(0, ['J1', 'R1', 'R2', 'J2', 'R3'])).toEqual(['R1', 'R2', 'R3', 'J1', 'J2']);
  });

  it('never refuses a job image as queue_full, and counts the passes by whom they were for', async () => {
    const queue = new InferenceQueue({ concurrency: 1, maxQueued: 1, jobShare: 0.1 });
    let release!: () => void;
    const blocker = queue.run(() => new Promise<void>((resolve) => (release = resolve)));
    const waiting = queue.run(async () => 'request');
    await expect(queue.run(async () => 'refused')).rejects.toMatchObject({ code: 'queue_full' });
    const job = queue.jobSlot.run(async () => 'job');
    release();
    expect(await Promise.all([blocker, waiting, job])).toEqual([undefined, 'request', 'job']);
    expect(queue.passesFor).toEqual({ interactive: 2, job: 1 });
  });

  it('lets a job runner start one image at a time while requests keep the model busy, as many as it may while idle', async () => {
    const shared = new InferenceQueue({ concurrency: 1, maxQueued: 4, jobShare: 0.2 });
    const idleOnly = new InferenceQueue({ concurrency: 1, maxQueued: 4, jobShare: 0 });
    expect([shared.mayStartJob(0), shared.mayStartJob(1), idleOnly.mayStartJob(0)]).toEqual([true, true, true]);
    let release!: () => void;
    const busy = [shared, idleOnly].map((queue) => queue.run(() => new Promise<void>((resolve) => (release = resolve))));
    expect([shared.mayStartJob(0), shared.mayStartJob(1), idleOnly.mayStartJob(0)]).toEqual([true, false, false]);
    release();
    await Promise.race(busy);
  });
});
