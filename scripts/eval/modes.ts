import { DEFAULT_REFINE_SETTINGS, type RefineSettings } from '../../src/pipeline/refine/refine-cutout.js';
import type { Quality } from '../../src/pipeline/views.js';

/**
 * The ways the eval can run the pipeline: as the API does with `refine: false` and by
 * default, each with one view (`quality: fast`: `raw`, `refined`), with the views fused
 * (`quality: best`: `best-raw`, `best`) or with the second view only where the first is
 * doubtful (`quality: auto`: `auto-raw`, `auto`), and (`--roi MARGIN`, binary masks) refined
 * with one view and a `roi` around the true subject.
 */
export type ModeName = 'raw' | 'refined' | 'best-raw' | 'best' | 'auto-raw' | 'auto' | 'roi';

/** The `quality` a mode runs with. */
export function qualityOf(mode: ModeName): Quality {
  if (mode === 'best' || mode === 'best-raw') return 'best';
  return mode === 'auto' || mode === 'auto-raw' ? 'auto' : 'fast';
}

/**
 * The green-screen test adds a third way, to tell the two parts of refinement apart: the
 * refined alpha with the photo's colours left as they are.
 */
export type FringeModeName = 'raw' | 'refined' | 'alphaOnly';

/**
 * What `removeBackground`'s `refine` option gets in each mode, the refined modes with
 * `settings` (the defaults unless `--refine-settings` changes some).
 */
export function refineOption(mode: FringeModeName | ModeName, settings: RefineSettings = DEFAULT_REFINE_SETTINGS): false | RefineSettings {
  if (mode === 'raw' || mode === 'best-raw' || mode === 'auto-raw') return false;
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

export const MODE_LABEL: Record<FringeModeName | ModeName, string> = {
  raw: 'raw',
  alphaOnly: 'refined alpha, raw colours',
  refined: 'refined',
  'best-raw': 'views fused, raw',
  best: 'views fused, refined',
  'auto-raw': 'second view where doubtful, raw',
  auto: 'second view where doubtful, refined',
  roi: 'refined, roi',
};

const QUALITY_MODES: Record<Quality, { raw: ModeName; refined: ModeName }> = {
  fast: { raw: 'raw', refined: 'refined' },
  best: { raw: 'best-raw', refined: 'best' },
  auto: { raw: 'auto-raw', refined: 'auto' },
};

/**
 * `--refine on|off|compare` and `--quality fast|best|auto|compare` (compare: all three) as the
 * modes to run, in print order; undefined for a value neither takes.
 */
export function modesFor(refine: string | undefined, quality: string | undefined = 'fast'): ModeName[] | undefined {
  const refines = refine === undefined || refine === 'compare' ? [false, true] : refine === 'on' ? [true] : refine === 'off' ? [false] : undefined;
  const qualities: Quality[] | undefined = quality === 'compare' ? ['fast', 'best', 'auto'] : quality === 'fast' || quality === 'best' || quality === 'auto' ? [quality] : undefined;
  if (!refines || !qualities) return undefined;
  return qualities.flatMap((q) => refines.map((refined) => QUALITY_MODES[q][refined ? 'refined' : 'raw']));
}
