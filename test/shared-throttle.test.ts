import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { RedisAttemptThrottle } from '../src/dashboard/redis-attempt-throttle.js';
import { ModelService } from '../src/model/model-service.js';
import { openRedis } from '../src/redis/open-redis.js';
import { startDashboardApp, type DashboardApp } from './browser/dashboard-app.js';
import { startCuttableProxy, targetOf } from './helpers/cuttable-proxy.js';
import { fakeSegmenter } from './helpers/fake-segmenter.js';

// The dashboard's sign-in throttle shared through Redis by several replicas: failures counted at one
// replica block the key at every other one, and while Redis is away each replica still
// counts in its own memory, so the throttle never simply opens.

const redisUrl = process.env.REDIS_URL;
if (!redisUrl) console.error('[cutout tests] shared sign-in throttle tests SKIPPED: REDIS_URL is not set (.ci/run sets it)');

const WINDOW_MS = 60_000;
const connections: Redis[] = [];
afterAll(async () => {
  for (const redis of connections) redis.disconnect();
});

/** A replica's throttle: its own connection, a name unique to this test run. */
function replicaThrottle(url: string, name: string, errors: unknown[] = []) {
  const redis = openRedis(url, pino({ level: 'silent' }));
  connections.push(redis);
  const throttle = new RedisAttemptThrottle(redis, { name, maxFailures: 3, windowMs: WINDOW_MS, onRedisError: (error) => errors.push(error) });
  return { redis, throttle };
}

const ready = (redis: Redis) => (redis.status === 'ready' ? Promise.resolve() : new Promise((resolve) => redis.once('ready', resolve)));

describe.skipIf(!redisUrl)('sign-in throttle shared through Redis', () => {
  it('counts failures at every replica against one allowance, and a success at one resets it for all', async () => {
    const name = `test-${randomBytes(4).toString('hex')}`;
    const [a, b, c] = [replicaThrottle(redisUrl!, name), replicaThrottle(redisUrl!, name), replicaThrottle(redisUrl!, name)];
    await Promise.all([a, b, c].map(({ redis }) => ready(redis)));
    await a.throttle.fail('owner@example.com');
    await b.throttle.fail('owner@example.com');
    expect(await c.throttle.blockedFor('owner@example.com')).toBe(0);
    await c.throttle.fail('owner@example.com');
    // Three failures at three replicas: blocked at each, for about the window.
    for (const { throttle } of [a, b, c]) {
      const wait = await throttle.blockedFor('owner@example.com');
      expect(wait).toBeGreaterThan(WINDOW_MS / 2);
      expect(wait).toBeLessThanOrEqual(WINDOW_MS);
    }
    expect(await a.throttle.blockedFor('other@example.com')).toBe(0);
    // No email in Redis: the key is its hash.
    expect(await a.redis.keys(`cutout-throttle:${name}:*`)).not.toContainEqual(expect.stringContaining('owner'));
    await b.throttle.reset('owner@example.com');
    expect(await a.throttle.blockedFor('owner@example.com')).toBe(0);
  });

  it('while Redis is away, still blocks by this replica\'s own count, fast; then shares again', async () => {
    const name = `test-${randomBytes(4).toString('hex')}`;
    const proxy = await startCuttableProxy(targetOf(redisUrl!, 6379));
    const errors: unknown[] = [];
    const cut = replicaThrottle(proxy.rewrite(redisUrl!), name, errors);
    const other = replicaThrottle(redisUrl!, name);
    try {
      await Promise.all([ready(cut.redis), ready(other.redis)]);
      await cut.throttle.fail('10.0.0.7');
      await proxy.cut();
      const started = performance.now();
      await cut.throttle.fail('10.0.0.7');
      await cut.throttle.fail('10.0.0.7');
      expect(await cut.throttle.blockedFor('10.0.0.7')).toBeGreaterThan(0);
      // Neither open nor stuck: Redis's errors reached the throttle (it did not wait for the
      // connection to come back, which, cut, it never would), and it answered from memory
      // within a sign-in's time.
      expect(errors.length).toBeGreaterThan(0);
      expect(performance.now() - started).toBeLessThan(10_000);
      // The other replica saw only the failure made before the cut.
      expect(await other.throttle.blockedFor('10.0.0.7')).toBe(0);

      await proxy.restore();
      await ready(cut.redis);
      await cut.throttle.fail('10.0.0.8');
      await other.throttle.fail('10.0.0.8');
      await other.throttle.fail('10.0.0.8');
      expect(await cut.throttle.blockedFor('10.0.0.8')).toBeGreaterThan(0);
    } finally {
      await proxy.close();
    }
  });
});

describe.skipIf(!redisUrl)('sign-in throttle across two apps on one store and one Redis', () => {
  it('refuses the right password at one app after five wrong ones at the other', async () => {
    const password = 'correct horse battery';
    const email = `owner-${randomBytes(4).toString('hex')}@example.com`;
    const model = ModelService.ofSegmenter(fakeSegmenter());
    const a = await startDashboardApp({ redisUrl, ownerEmail: email, ownerPassword: password }, { model });
    const b = await startDashboardApp({ redisUrl, dataDir: a.config.dataDir }, { model });
    try {
      const signIn = async (t: DashboardApp, pass: string) => {
        const page = await t.app.inject({ method: 'GET', url: '/dashboard/sign-in' });
        const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(page.body)![1];
        const cookie = String(page.headers['set-cookie']).split(';')[0];
        return t.app.inject({
          method: 'POST',
          url: '/dashboard/sign-in',
          headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ _csrf: csrf, email, password: pass }).toString(),
        });
      };
      for (const t of [a, b, a, b, a]) expect((await signIn(t, 'wrong password')).statusCode).toBe(401);
      const refused = await signIn(b, password);
      expect(refused.statusCode).toBe(429);
      expect(refused.body).toContain('Too many failed sign-ins');
    } finally {
      await b.close();
      await a.close();
    }
  });
});
