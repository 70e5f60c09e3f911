/** BullMQ's largest priority (2^21 - 1); a lower number is served first. */
export const PRIORITY_LIMIT = 2 ** 21 - 1;

/**
 * The BullMQ priority of an item that is the `position`-th (from 0) of its token's waiting
 * items: every token's first waiting item comes before any token's second, and so on, so a
 * token with 10,000 images waiting does not hold back another's 10, which are added with
 * positions 0 to 9 whenever they come. Equal priorities are served in the order they were
 * added, so a token's own items keep their order.
 *
 * @example fleetPriority(0) // 1, the first waiting item of a token
 */
export const fleetPriority = (position: number): number => Math.min(PRIORITY_LIMIT, Math.max(0, Math.floor(position)) + 1);
