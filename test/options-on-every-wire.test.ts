import fc from 'fast-check';
import type { TSchema } from 'typebox';
import Value from 'typebox/value';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RawImage } from '../src/image/raw-image.js';
import { ModelService } from '../src/model/model-service.js';
import type { Segmenter } from '../src/model/segmenter.js';
import { OPTIONS, optionsOf, wireUse, type OptionName, type Wire } from '../src/options/option-table.js';
import { OptionValueError } from '../src/options/option-value-error.js';
import { readOptions } from '../src/options/read-options.js';
import { multipartBody } from '../scripts/lib/multipart-body.js';
import { startTestApp, type TestApp } from './helpers/app.js';
import { makePhoto } from './helpers/images.js';

/**
 * One option, one verdict: the same fields sent to the native API (as JSON, and as the
 * upload's form text) and to remove.bg's route give the same status, the same refusal's
 * detail, and the same image, for generated values of every option both wires take. A tiny
 * model (16×16, a centred square) answers at once, so hundreds of requests take seconds.
 */

/**
 * Where remove.bg's documentation says otherwise, the wires differ by design (docs/api.md,
 * "One option, every wire"): its defaults are size=preview and format=auto, the native ones
 * no cap and PNG (or what Accept prefers). Each request here names both when it does not
 * generate them, so that only the values are compared.
 */
const DOCUMENTED_DEFAULTS: Partial<Record<OptionName, string>> = { size: 'full', format: 'png' };

/** A model whose mask is a centred square, for cuts that crop, place and shadow something. */
function squareSegmenter(): Segmenter {
  const size = 16;
  const mask = new Uint8Array(size * size);
  for (let y = 4; y < 12; y++) mask.fill(255, y * size + 4, y * size + 12);
  return {
    size,
    async segment(pictures: readonly RawImage[]) {
      return pictures.map(() => ({ data: mask.slice(), width: size, height: size, channels: 1 }));
    },
    close: async () => {},
  };
}

/** Values near the valid ones of each kind, and some that are not. */
const word = fc.constantFrom(
  '', ' ', '0', '1', 'true', 'FALSE', 'yes', '30', '30px', '10%', '50%', '51%', '501px', '10% 30px', '1 2 3 4', '1 2 3', '0 0 100% 100%', '10 10 5 5',
  'center', 'original', '0% 100%', '101%', 'red', 'f00', '#f00c', '12345', 'png', 'JPG', 'webp', 'zip', 'auto', 'gif', 'alpha', 'rgba',
  'preview', 'medium', 'hd', 'full', '50MP', 'drop', '3D', 'car', 'long', '20', '100', '101', 'http://127.0.0.1/bg.png', 'toString',
);
const value = fc.oneof(word, word, fc.boolean(), fc.integer({ min: -2, max: 600 }), fc.constant(null), fc.string({ maxLength: 8 }));
const SHARED = optionsOf('native').filter((name) => wireUse(name, 'removebg') !== undefined);

describe('every option on the native and the remove.bg wire', () => {
  let t: TestApp;
  let managed: string;
  let key: string;
  let photo: string;
  beforeAll(async () => {
    t = await startTestApp({ urlAllowPrivate: false, rateLimit: 1_000_000 }, { model: ModelService.ofSegmenter(squareSegmenter()) });
    managed = await t.managedToken();
    key = (await t.tokens.createUserToken('wires')).tokenId;
    photo = (await makePhoto('png', 40, 30)).toString('base64');
  });
  afterAll(async () => t?.close());

  /** Status, refusal detail and image bytes of one request on each wire. */
  async function verdicts(fields: Record<string, unknown>) {
    // null is "not given" on both wires: where their defaults differ, the named one stands.
    const given = Object.fromEntries(Object.entries(fields).filter(([name, value]) => !(value === null && name in DOCUMENTED_DEFAULTS)));
    const sent = { ...DOCUMENTED_DEFAULTS, ...given };
    const json = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: managed }, payload: { image_base64: photo, ...sent } });
    const removebg = await t.app.inject({ method: 'POST', url: '/v1.0/removebg', headers: { 'x-api-key': key }, payload: { image_file_b64: photo, ...sent } });
    const native = json.statusCode === 200 ? Buffer.from(json.json().image_base64, 'base64') : json.json().detail;
    const compat = removebg.statusCode === 200 ? removebg.rawPayload : removebg.json().errors[0].detail;
    return { native: { status: json.statusCode, answer: native }, removebg: { status: removebg.statusCode, answer: compat } };
  }

  it('gives the same status, detail and image for the same values', async () => {
    const statuses = new Set<number>();
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.constantFrom(...SHARED), value, { maxKeys: 3 }), async (fields) => {
        const { native, removebg } = await verdicts(fields);
        statuses.add(native.status);
        expect(removebg.status, JSON.stringify(fields)).toBe(native.status);
        expect(removebg.answer, JSON.stringify(fields)).toEqual(native.answer);
      }),
      // An opaque background with the format not given: remove.bg's auto makes it a JPEG.
      { numRuns: 200, examples: [[{ bg_color: 100, format: null }]] },
    );
    // Both verdicts were drawn: cuts made and values refused.
    expect([...statuses].sort()).toEqual([200, 400]);
  }, 300_000);

  it('reads the upload\'s form text as it reads JSON', async () => {
    const text = fc.dictionary(fc.constantFrom(...optionsOf('native')), word, { maxKeys: 3 });
    await fc.assert(
      fc.asyncProperty(text, async (fields) => {
        const sent = { ...DOCUMENTED_DEFAULTS, ...fields };
        const json = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/base64', headers: { authorization: managed }, payload: { image_base64: photo, ...sent } });
        const form = multipartBody([{ name: 'file', filename: 'a.png', contentType: 'image/png', data: Buffer.from(photo, 'base64') }, ...Object.entries(sent).map(([name, data]) => ({ name, data }))]);
        const upload = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/multipart', headers: { authorization: managed, 'content-type': form.contentType }, payload: form.body });
        expect(upload.statusCode, JSON.stringify(fields)).toBe(json.statusCode);
        expect(upload.json(), JSON.stringify(fields)).toEqual({ ...json.json(), ...(json.statusCode !== 200 && { instance: upload.json().instance, request_id: upload.json().request_id }) });
      }),
      { numRuns: 100 },
    );
  }, 300_000);

  it('takes every option of the table with the upload, within the form\'s field limit', async () => {
    // One background at most: bg_color stands for the others.
    const together = optionsOf('native').filter((name) => !('background' in OPTIONS[name]) || name === 'bg_color');
    const every = Object.fromEntries(together.map((name) => [name, OPTIONS[name].example ?? '']));
    const form = multipartBody([{ name: 'file', filename: 'a.png', contentType: 'image/png', data: Buffer.from(photo, 'base64') }, ...Object.entries(every).map(([name, data]) => ({ name, data }))]);
    const upload = await t.app.inject({ method: 'POST', url: '/api/v1/background/remove/multipart', headers: { authorization: managed, 'content-type': form.contentType }, payload: form.body });
    expect(upload.statusCode, upload.body.slice(0, 300)).toBe(200);
    expect(Object.keys(every).length).toBeGreaterThan(15);
  });
});

/** Values a schema allows, for the subset the value kinds use. */
function allowedBy(schema: TSchema): fc.Arbitrary<unknown> {
  const node = schema as { type?: string; enum?: readonly string[]; anyOf?: TSchema[]; minimum?: number; maximum?: number; pattern?: string; minLength?: number; maxLength?: number };
  if (node.anyOf) return fc.oneof(...node.anyOf.map(allowedBy));
  if (node.enum) return fc.constantFrom(...node.enum);
  if (node.type === 'boolean') return fc.boolean();
  if (node.type === 'integer') return fc.integer({ min: node.minimum ?? -1e6, max: node.maximum ?? 1e6 });
  if (node.type === 'string' && node.pattern) return fc.stringMatching(new RegExp(node.pattern)).filter((text) => text.length >= (node.minLength ?? 0) && text.length <= (node.maxLength ?? Infinity));
  throw new Error(`no values for the schema ${JSON.stringify(schema)}`);
}

/** Whether option `name`, alone, is read on `wire` without a refusal of its form (a region's corners out of order is one no schema can say). */
function readsAlone(name: OptionName, wire: Wire, sent: unknown): boolean {
  try {
    readOptions({ ...DOCUMENTED_DEFAULTS, [name]: sent }, wire);
    return true;
  } catch (error) {
    if (error instanceof OptionValueError && error.problem === 'roi_region_empty') return true;
    if (error instanceof OptionValueError) return false;
    throw error;
  }
}

describe("each option's reader against its schema (the OpenAPI field and the SDK's type)", () => {
  const wires: Wire[] = ['native', 'removebg', 'photoroom'];
  const taken = wires.flatMap((wire) => optionsOf(wire).filter((name) => !wireUse(name, wire)?.only).map((name) => [name, wire] as const));

  it('reads every value the schema allows, on every wire that takes the option', () => {
    for (const [name, wire] of taken) {
      fc.assert(
        fc.property(allowedBy(OPTIONS[name].kind.schema), (sent) => {
          expect(Value.Check(OPTIONS[name].kind.schema, sent), `${name}: ${JSON.stringify(sent)}`).toBe(true);
          expect(readsAlone(name, wire, sent), `${name} on ${wire}: ${JSON.stringify(sent)}`).toBe(true);
        }),
        { numRuns: 100 },
      );
    }
  });

  it('refuses nothing the schema allows among the near-valid values, and the schema refuses what the reader does', () => {
    const seen = { allowed: 0, refused: 0 };
    for (const [name, wire] of taken) {
      fc.assert(
        fc.property(value, (sent) => {
          const allowed = Value.Check(OPTIONS[name].kind.schema, sent);
          seen[allowed ? 'allowed' : 'refused']++;
          if (!readsAlone(name, wire, sent)) expect(allowed, `${name} on ${wire}: the schema allows ${JSON.stringify(sent)}, which the reader refuses`).toBe(false);
        }),
        { numRuns: 200 },
      );
    }
    // Both sides of the schema were drawn.
    expect(seen.allowed).toBeGreaterThan(100);
    expect(seen.refused).toBeGreaterThan(100);
  });
});
