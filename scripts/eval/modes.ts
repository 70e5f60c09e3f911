import { DEFAULT_REFINE_SETTINGS, type RefineSettings } from '../../src/pipeline/refine/refine-cutout.js';

/**
 * The ways the eval can run the pipeline: as the API does with `refine: false`, by default,
 * and (`--roi MARGIN`, binary masks) by default with a `roi` around the true subject.
 */
export type ModeName = 'raw' | 'refined' | 'roi';

/**
 * The green-screen test adds a third way, to tell the two parts of refinement apart: the
 * refined alpha with the photo's colours left as they are.
 */
export type FringeModeName = Exclude<ModeName, 'roi'> | 'alphaOnly';

/**
 * What `removeBackground`'s `refine` option gets in each mode, the refined modes with
 * `settings` (the defaults unless `--refine-settings` changes some).
 */
export function refineOption(mode: FringeModeName | ModeName, settings: RefineSettings = DEFAULT_REFINE_SETTINGS): false | RefineSettings {
  if (mode === 'raw') return false;
  return mode === 'alphaOnly' ? { ...settings, colour: false } : settings;
}

/**
 * `--refine-settings '{"gridSide":256}'`: the defaults with those fields changed, for trying
 * settings without editing the code. Unknown fields and values of the wrong type are refused.
 */
export function parseRefineSettings(json: string | undefined): RefineSettings {
  if (json === undefined) return DEFAULT_REFINE_SETTINGS;
  const given: unknown = JSON.parse(json);
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw new Error('--refine-settings takes a JSON object');
  for (const [key, value] of Object.entries(given)) {
    const expected = typeof DEFAULT_REFINE_SETTINGS[key as keyof RefineSettings];
    if (expected === 'undefined') throw new Error(`--refine-settings: unknown setting ${key}; known: ${Object.keys(DEFAULT_REFINE_SETTINGS).join(', ')}`);
    if (typeof value !== expected) throw new Error(`--refine-settings: ${key} must be a ${expected}`);
  }
  return { ...DEFAULT_REFINE_SETTINGS, ...(given as Partial<RefineSettings>) };
}

export const MODE_LABEL: Record<FringeModeName | ModeName, string> = { raw: 'raw', alphaOnly: 'refined alpha, raw colours', refined: 'refined', roi: 'refined, roi' };

/** `--refine on|off|compare` as the modes to run, in print order. */
export function modesFor(refine: string | undefined): ModeName[] | undefined {
  if (refine === undefined || refine === 'compare') return ['raw', 'refined'];
  if (refine === 'on') return ['refined'];
  if (refine === 'off') return ['raw'];
  return undefined;
}
