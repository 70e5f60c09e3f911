import { describe, expect, it } from 'vitest';
import { fleetPriority, PRIORITY_LIMIT } from '../../src/jobs/fleet-priority.js';

describe('fleetPriority', () => {
  it("is 1 for a token's first waiting item, one more for each item ahead of it, and never past BullMQ's limit", () => {
    expect([0, 1, 9, 49_999].map(fleetPriority)).toEqual([1, 2, 10, 50_000]);
    expect(PRIORITY_LIMIT).toBe(2_097_151);
    expect(fleetPriority(PRIORITY_LIMIT - 1)).toBe(PRIORITY_LIMIT);
    expect(fleetPriority(10_000_000)).toBe(PRIORITY_LIMIT);
    // A position is never below the first.
    expect(fleetPriority(-3)).toBe(1);
  });
});
