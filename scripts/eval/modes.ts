import { DEFAULT_REFINE_SETTINGS, type RefineSettings } from '../../src/pipeline/refine.js';

/** The ways the eval can run the pipeline: as the API does with `refine: false`, and by default. */
export type ModeName = 'raw' | 'refined';

/** What `removeBackground`'s `refine` option gets in each mode. */
export const MODE_REFINE: Record<ModeName, boolean> = { raw: false, refined: true };

/**
 * The green-screen test adds a third way, to tell the two parts of refinement apart: the
 * refined alpha with the photo's colours left as they are.
 */
export type FringeModeName = ModeName | 'alphaOnly';

export const FRINGE_MODE_REFINE: Record<FringeModeName, boolean | RefineSettings> = {
  raw: false,
  alphaOnly: { ...DEFAULT_REFINE_SETTINGS, colour: false },
  refined: true,
};

export const MODE_LABEL: Record<FringeModeName, string> = { raw: 'raw', alphaOnly: 'refined alpha, raw colours', refined: 'refined' };

/** `--refine on|off|compare` as the modes to run, in print order. */
export function modesFor(refine: string | undefined): ModeName[] | undefined {
  if (refine === undefined || refine === 'compare') return ['raw', 'refined'];
  if (refine === 'on') return ['refined'];
  if (refine === 'off') return ['raw'];
  return undefined;
}
