import Fastify, { type FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { rateLimitPlugin } from '../../src/http/rate-limit.js';
import { ModelService } from '../../src/model/model-service.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { uniformMask } from '../helpers/fake-segmenter.js';
import { makePhoto } from '../helpers/images.js';

// The per-token rate limit in memory, with a stand-in model: fast enough for mutation testing
// (overload.test.ts covers Redis and two apps sharing one count). Apps are built inside the
// tests so that mutation testing can tell which test reaches the plugin.

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function start(rateLimit: number, redisUrl?: string): Promise<TestApp> {
  // A tiny stand-in model: the limit is about counting, not pixels.
  const model = ModelService.ofSegmenter({ size: 32, segment: async (pictures) => pictures.map(() => uniformMask(32, 255)), close: async () => {} });
  t = await startTestApp({ rateLimit, redisUrl }, { model });
  return t;
}

/** A background request with no image: cheap, and counted like any other. */
const post = (app: TestApp, authorization: string) =>
  app.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization }, payload: {} });

describe('the per-token rate limit', () => {
  it('lets a user token make rateLimit requests a minute, then answers 429 rate_limited with Retry-After', async () => {
    const app = await start(2);
    const token = await app.managedToken();
    const photo = await makePhoto('png', 32, 32);
    const first = await app.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: token }, payload: { image_base64: photo.toString('base64') } });
    expect(first.statusCode).toBe(200);
    // The draft standard's headers come with every background answer.
    expect(first.headers['ratelimit-limit']).toBe('2');
    expect(first.headers['ratelimit-remaining']).toBe('1');
    const reset = Number(first.headers['ratelimit-reset']);
    expect(reset).toBeGreaterThan(0);
    expect(reset).toBeLessThanOrEqual(60);

    expect((await post(app, token)).statusCode).toBe(400);
    const limited = await post(app, token);
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['content-type']).toMatch(/^application\/problem\+json/);
    const retryAfter = Number(limited.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    expect(limited.json()).toMatchObject({ code: 'rate_limited', status: 429 });
    expect(limited.json().detail).toMatch(/^This token may make 2 removals a minute; retry in \d+ (second|minute)s?\.$/);
  });

  it('counts all managed tokens of one user token together, and each user token apart', async () => {
    const app = await start(1);
    const shared = await app.managedToken();
    const sameUserToken = await app.managedToken();
    const { tokenId } = await app.tokens.createUserToken('another');
    const otherUserToken = (await app.tokens.exchange(tokenId)).managedToken;

    expect((await post(app, shared)).statusCode).toBe(400);
    expect((await post(app, sameUserToken)).statusCode).toBe(429);
    expect((await post(app, otherUserToken)).statusCode).toBe(400);
    expect((await post(app, otherUserToken)).statusCode).toBe(429);
  });

  it('without Redis, the native and the remove.bg-compatible routes share one count per token', async () => {
    const app = await start(2);
    const { tokenId } = await app.tokens.createUserToken('both-routes');
    const managed = (await app.tokens.exchange(tokenId)).managedToken;
    const compat = () => app.app.inject({ method: 'POST', url: '/v1.0/removebg', headers: { 'x-api-key': tokenId }, payload: { size: 'full' } });
    expect((await post(app, managed)).statusCode).toBe(400);
    expect((await compat()).statusCode).toBe(400);
    expect((await compat()).statusCode).toBe(429);
    expect((await post(app, managed)).statusCode).toBe(429);
  });

  it('keeps its minute fixed: requests past the limit neither restart nor lengthen the wait', async () => {
    const start0 = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(start0);
    try {
      const app = await start(1);
      const token = await app.managedToken();
      expect((await post(app, token)).statusCode).toBe(400);
      // Half a minute later, two refused requests: each still waits the window's other half.
      clock.mockReturnValue(start0 + 30_000);
      for (let i = 0; i < 2; i++) {
        const refused = await post(app, token);
        expect(refused.statusCode).toBe(429);
        expect(Number(refused.headers['retry-after'])).toBe(30);
      }
    } finally {
      clock.mockRestore();
    }
  });

  it('does not limit the token exchange', async () => {
    const app = await start(1);
    await app.managedToken();
    const token = await app.managedToken();
    expect((await post(app, token)).statusCode).toBe(400);
    expect((await post(app, token)).statusCode).toBe(429);
    const { tokenId } = await app.tokens.createUserToken('exchanger');
    for (let i = 0; i < 3; i++) {
      expect((await app.app.inject({ method: 'POST', url: '/api/v1/auth/token', headers: { token: tokenId } })).statusCode).toBe(200);
    }
  });

  it('is off at CUTOUT_RATE_LIMIT=0: no limit and no RateLimit headers', async () => {
    const app = await start(0);
    const token = await app.managedToken();
    for (let i = 0; i < 5; i++) {
      const response = await post(app, token);
      expect(response.statusCode).toBe(400);
      expect(response.headers['ratelimit-limit']).toBeUndefined();
    }
  });
});

describe('the rate limit plugin', () => {
  it('refuses to be registered where the services and the auth hook are not, so that it never counts by address', async () => {
    const app = Fastify();
    try {
      await expect(app.register(rateLimitPlugin).ready()).rejects.toThrow(/dependency 'cutout-services' of plugin 'cutout-rate-limit'/);
    } finally {
      await app.close().catch(() => {});
    }
  });
});

/**
 * A stand-in for the app's Redis connection, enough for @fastify/rate-limit's store: it keeps
 * the counts in a Map and records the keys, or fails every command as an unreachable Redis
 * does. The real Redis case below needs REDIS_URL; this one runs everywhere.
 */
function standInRedis(down: boolean) {
  const counts = new Map<string, number>();
  return {
    counts,
    defineCommand() {},
    rateLimit(key: string, timeWindow: number, _max: number, _c: boolean, _e: boolean, callback: (error: Error | null, result?: [number, number]) => void) {
      if (down) return callback(new Error('connect ECONNREFUSED 127.0.0.1:6379'));
      counts.set(key, (counts.get(key) ?? 0) + 1);
      callback(null, [counts.get(key)!, timeWindow]);
    },
  };
}

/** The plugin alone, its dependencies stood in for: a limit of 1, the given Redis, and a managed token of user token `u1`. */
async function bareApp(redis: ReturnType<typeof standInRedis>): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(fp(async (a) => void a.decorate('config', { rateLimit: 1 } as FastifyInstance['config']), { name: 'cutout-services' }));
  await app.register(fp(async (a) => void a.decorate('redis', redis as unknown as FastifyInstance['redis']), { name: 'cutout-redis' }));
  await app.register(
    fp(async (a) => void a.addHook('onRequest', async (request) => void (request.managedToken = { userTokenId: 'u1' } as NonNullable<typeof request.managedToken>)), {
      name: 'cutout-auth',
    }),
  );
  await app.register(rateLimitPlugin);
  app.get('/', async () => 'ok');
  return app;
}

describe('the rate limit with a stand-in Redis', () => {
  it("counts under Cutout's own key prefix, by user token", async () => {
    const redis = standInRedis(false);
    const app = await bareApp(redis);
    try {
      expect((await app.inject('/')).statusCode).toBe(200);
      expect((await app.inject('/')).statusCode).toBe(429);
      expect([...redis.counts.keys()]).toEqual(['cutout-rate-u1']);
    } finally {
      await app.close();
    }
  });

  it('lets requests through uncounted while Redis cannot be reached', async () => {
    const app = await bareApp(standInRedis(true));
    try {
      for (let i = 0; i < 3; i++) expect((await app.inject('/')).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });
});

const redisUrl = process.env.REDIS_URL;
describe.skipIf(!redisUrl)('the rate limit in Redis', () => {
  it("keeps its counts under Cutout's own key prefix", async () => {
    const app = await start(1, redisUrl);
    const redis = new Redis(redisUrl!);
    try {
      const token = await app.managedToken();
      const { userTokenId } = await app.tokens.verifyManagedToken(token, undefined);
      expect((await post(app, token)).statusCode).toBe(400);
      expect((await post(app, token)).statusCode).toBe(429);
      // The count is keyed by the user token; other tests may share this Redis.
      expect(await redis.keys(`*${userTokenId}*`)).toEqual([`cutout-rate-${userTokenId}`]);
    } finally {
      redis.disconnect();
    }
  });
});
