import fc from 'fast-check';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CutoutError, ERRORS, type ErrorCode } from '../src/errors.js';
import { decodeBase64Image } from '../src/api/base64-image.js';
import { ModelService } from '../src/model/model-service.js';
import type { Segmenter } from '../src/model/segmenter.js';
import type { FormPart } from '../scripts/lib/multipart-body.js';
import { multipartForm } from './bad-input-corpus.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { uniformMask } from './helpers/fake-segmenter.js';

/**
 * Property-based tests of what the service parses before the model: the Base64 decoder on its
 * own, and the three endpoints over HTTP with a tiny fake model (32×32, answers at once), so
 * that hundreds of requests take a second or two.
 */

const LIMIT = 1 << 20;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const WHITESPACE = [' ', '\t', '\r', '\n', '\r\n'];
const DATA_PREFIXES = ['data:image/png;base64,', 'data:;base64,', 'data:image/jpeg;name=photo.jpg;base64,', 'DATA:IMAGE/WEBP;BASE64,', 'data:application/octet-stream;base64,'];

/** Everything a valid field may hold besides the alphabet: URL-safe letters, padding, whitespace. */
const isTolerated = (c: string) => /^[A-Za-z0-9+/_=-]$/.test(c) || /^\s$/u.test(c);

/** Runs `f` and returns the CutoutError it throws, failing on any other outcome. */
function cutoutErrorOf(f: () => unknown): CutoutError {
  try {
    f();
  } catch (error) {
    if (error instanceof CutoutError) return error;
    throw new Error(`threw ${String(error)} instead of a CutoutError`, { cause: error });
  }
  throw new Error('did not throw');
}

describe('decodeBase64Image', () => {
  const bytes = fc.uint8Array({ minLength: 1, maxLength: 300 });

  it('round-trips standard Base64 of any bytes', () => {
    fc.assert(
      fc.property(bytes, (data) => {
        expect(decodeBase64Image(Buffer.from(data).toString('base64'), LIMIT)).toEqual(Buffer.from(data));
      }),
      { numRuns: 200 },
    );
  });

  it('round-trips with whitespace anywhere, padding left out, the URL-safe alphabet and a data: prefix, in any combination', () => {
    const variant = fc.record({
      breaks: fc.array(fc.tuple(fc.nat(), fc.constantFrom(...WHITESPACE)), { maxLength: 12 }),
      stripPadding: fc.boolean(),
      urlSafe: fc.boolean(),
      prefix: fc.option(fc.constantFrom(...DATA_PREFIXES), { nil: undefined }),
    });
    fc.assert(
      fc.property(bytes, variant, (data, { breaks, stripPadding, urlSafe, prefix }) => {
        let text = Buffer.from(data).toString('base64');
        if (stripPadding) text = text.replace(/=+$/, '');
        if (urlSafe) text = text.replace(/\+/g, '-').replace(/\//g, '_');
        for (const [at, space] of breaks) {
          const i = at % (text.length + 1);
          text = text.slice(0, i) + space + text.slice(i);
        }
        expect(decodeBase64Image((prefix ?? '') + text, LIMIT)).toEqual(Buffer.from(data));
      }),
      { numRuns: 200 },
    );
  });

  it('refuses any text holding a character outside the alphabet, whitespace and =, always as invalid_base64', () => {
    const tolerated = fc.string({ unit: fc.constantFrom(...ALPHABET, '-', '_', '=', ...WHITESPACE), maxLength: 80 });
    const anyCodeUnit = fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)); // lone surrogates too
    const anyCodePoint = fc.string({ unit: 'binary', minLength: 1, maxLength: 1 });
    const bad = fc.oneof(anyCodeUnit, anyCodePoint, fc.constantFrom('$', '.', ':', ',', ';', '%', '"', '\\', '\u0000', 'é', '\u00ad', '😀')).filter((c) => !isTolerated(c));
    fc.assert(
      fc.property(tolerated, bad, tolerated, (before, c, after) => {
        expect(cutoutErrorOf(() => decodeBase64Image(before + c + after, LIMIT)).code).toBe('invalid_base64');
      }),
      { numRuns: 200 },
    );
  });

  it('on any string at all, returns 1..maxBytes bytes or throws a CutoutError, nothing else', () => {
    const anyText = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 60 }),
      fc.string({ unit: fc.constantFrom(...ALPHABET, '-', '_', '=', ' ', '\n', ':', ';', ','), maxLength: 60 }),
      fc.tuple(fc.constantFrom(...DATA_PREFIXES, 'data:', 'data:,', 'data:;base64'), fc.string({ maxLength: 40 })).map(([p, s]) => p + s),
    );
    fc.assert(
      fc.property(anyText, fc.integer({ min: 1, max: 64 }), (text, maxBytes) => {
        let decoded: Buffer;
        try {
          decoded = decodeBase64Image(text, maxBytes);
        } catch (error) {
          expect(error).toBeInstanceOf(CutoutError);
          expect(['invalid_base64', 'invalid_request', 'payload_too_large']).toContain((error as CutoutError).code);
          return;
        }
        expect(decoded.length).toBeGreaterThan(0);
        expect(decoded.length).toBeLessThanOrEqual(maxBytes);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses exactly the inputs that decode to more than maxBytes, as payload_too_large', () => {
    fc.assert(
      fc.property(bytes, fc.integer({ min: 1, max: 400 }), fc.boolean(), (data, maxBytes, stripPadding) => {
        let text = Buffer.from(data).toString('base64');
        if (stripPadding) text = text.replace(/=+$/, '');
        if (data.length > maxBytes) expect(cutoutErrorOf(() => decodeBase64Image(text, maxBytes)).code).toBe('payload_too_large');
        else expect(decodeBase64Image(text, maxBytes)).toHaveLength(data.length);
      }),
      { numRuns: 200 },
    );
  });
});

describe('request parsing over HTTP', () => {
  // Answers at once with a mask of ones, so a request that gets through costs a few ms.
  const fakeModel: Segmenter = { size: 32, segment: async (pictures) => pictures.map(() => uniformMask(32, 255)), close: async () => {} };
  // The url endpoint may only fetch this host (it does not exist), so no generated URL reaches the network.
  const ONLY_HOST = 'images.cutout-property-test.invalid';

  let t: TestApp;
  let auth: string;
  let images: Buffer[];

  beforeAll(async () => {
    // Hundreds of requests a second: the per-token rate limit is off.
    t = await startTestApp({ urlAllowHosts: [ONLY_HOST], rateLimit: 0 }, { model: ModelService.ofSegmenter(fakeModel) });
    auth = await t.managedToken();
    const photo = sharp({ create: { width: 16, height: 12, channels: 3, background: '#c84' } });
    images = await Promise.all((['png', 'jpeg', 'gif', 'webp', 'tiff'] as const).map((format) => photo.clone().toFormat(format).toBuffer()));
  });

  afterAll(async () => {
    await t?.close();
  });

  type Injected = Awaited<ReturnType<TestApp['app']['inject']>>;

  /** Either a cutout, or a 4xx problem+json whose code is registered with that very status. */
  function expectWellFormedAnswer(response: Injected): ErrorCode | 'ok' {
    expect(response.statusCode, `never a 5xx: ${response.body.slice(0, 300)}`).toBeLessThan(500);
    if (response.statusCode === 200) {
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(Object.keys(response.json())).toEqual(['image_base64']);
      return 'ok';
    }
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = response.json();
    expect(Object.keys(ERRORS)).toContain(body.code);
    expect(ERRORS[body.code as ErrorCode].status).toBe(response.statusCode);
    expect(body).toMatchObject({ type: `urn:cutout:error:${body.code}`, status: response.statusCode });
    expect(body.request_id).toBe(response.headers['x-request-id']);
    return body.code;
  }

  const postJson = (endpoint: 'base64' | 'url', payload: string) =>
    t.app.inject({
      method: 'POST',
      url: `/api/v1/background/remove/${endpoint}`,
      headers: { authorization: auth, 'content-type': 'application/json' },
      payload,
    });

  const endpoint = fc.constantFrom('base64' as const, 'url' as const);
  const anyJsonText = fc.oneof(
    fc.json({ maxDepth: 4 }),
    fc.anything({ maxDepth: 3, withNullPrototype: true }).map((value) => JSON.stringify(value) ?? 'null'),
    // Nearly right: the expected field beside arbitrary others, holding arbitrary JSON.
    fc.record({ image_base64: fc.jsonValue({ maxDepth: 2 }), image_url: fc.jsonValue({ maxDepth: 2 }), extra: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
  );

  it('any JSON body to the base64 and url endpoints gets a well-formed answer, never a 5xx', async () => {
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(endpoint, anyJsonText, async (where, text) => {
        seen.add(expectWellFormedAnswer(await postJson(where, text)));
      }),
      // The example makes sure a run always gets past the schema check, whatever the seed.
      { numRuns: 200, examples: [['base64', '{"image_base64":"ab$c","extra":[1]}']] },
    );
    // The generator reaches beyond the schema check.
    expect([...seen]).toEqual(expect.arrayContaining(['invalid_request', 'invalid_base64']));
  });

  it('any text as image_base64 gets a well-formed answer, never a 5xx', async () => {
    const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 80 }), fc.base64String({ maxLength: 80 }), fc.string({ unit: fc.constantFrom(...ALPHABET, '=', '-', '_', ' ', '$'), maxLength: 80 }));
    await fc.assert(
      fc.asyncProperty(text, async (value) => {
        expectWellFormedAnswer(await postJson('base64', JSON.stringify({ image_base64: value })));
      }),
      { numRuns: 200 },
    );
  });

  it('any URL or string as image_url gets a well-formed answer, never a 5xx', async () => {
    const url = fc.oneof(fc.webUrl({ withQueryParameters: true, withFragments: true }), fc.string({ maxLength: 60 }), fc.constantFrom('file:///etc/passwd', 'http://[::1]/', 'gopher://x/', 'http://user:pw@example.com/'));
    await fc.assert(
      fc.asyncProperty(url, async (value) => {
        const code = expectWellFormedAnswer(await postJson('url', JSON.stringify({ image_url: value })));
        // Nothing generated is on the allow list, so nothing is fetched.
        expect(['url_not_allowed', 'invalid_request']).toContain(code);
      }),
      { numRuns: 200 },
    );
  });

  const withAuth = (form: { payload: string | Buffer; headers: Record<string, string> }) => ({ payload: form.payload, headers: { ...form.headers, authorization: auth } });

  /** A valid small image with some of its bytes overwritten and possibly cut short. */
  const damagedImage = () =>
    fc
      .tuple(fc.nat({ max: 4 }), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }), fc.option(fc.nat(), { nil: undefined }))
      .map(([which, edits, cut]) => {
        const bytes = Buffer.from(images[which]);
        // Keep the signature, so that the decoder and not the sniffer has to cope.
        for (const [at, value] of edits) bytes[12 + (at % (bytes.length - 12))] = value;
        return cut === undefined ? bytes : bytes.subarray(0, 12 + (cut % (bytes.length - 11)));
      });

  it('any damaged image, as Base64 or uploaded, gets a well-formed answer, never a 5xx or a crash', async () => {
    await fc.assert(
      fc.asyncProperty(damagedImage(), fc.boolean(), async (bytes, asUpload) => {
        const response = asUpload
          ? await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/multipart', ...withAuth(multipartForm([{ name: 'file', filename: 'x.img', contentType: 'image/png', data: bytes }])) })
          : await postJson('base64', JSON.stringify({ image_base64: bytes.toString('base64') }));
        const code = expectWellFormedAnswer(response);
        expect(['ok', 'image_decode_failed', 'too_many_pixels', 'unsupported_image_format']).toContain(code);
      }),
      { numRuns: 150 },
    );
  });

  it('any well-framed multipart form gets a well-formed answer, never a 5xx', async () => {
    const part: fc.Arbitrary<FormPart> = fc.record(
      {
        name: fc.constantFrom('file', 'File', 'image', 'note', 'file[]'),
        filename: fc.constantFrom('photo.jpg', 'a.png', '', 'no extension', '../../etc/passwd'),
        contentType: fc.constantFrom('image/png', 'image/jpeg', 'application/octet-stream', 'text/plain', 'text/plain; charset=utf-8', 'multipart/mixed'),
        data: fc.oneof(fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)), fc.nat({ max: 4 }).map((i) => images[i]), fc.constant(Buffer.alloc(0))),
      },
      { requiredKeys: ['name', 'data'] },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(part, { maxLength: 5 }), async (parts) => {
        const form = multipartForm(parts);
        expectWellFormedAnswer(await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/multipart', ...withAuth(form) }));
      }),
      { numRuns: 150 },
    );
  });

  it('any bytes sent as multipart/form-data get a well-formed answer, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 200 }), fc.constantFrom('multipart/form-data; boundary=cutout', 'multipart/form-data'), async (body, type) => {
        const response = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/multipart', headers: { authorization: auth, 'content-type': type }, payload: Buffer.from(body) });
        expectWellFormedAnswer(response);
      }),
      { numRuns: 100 },
    );
  });
});
