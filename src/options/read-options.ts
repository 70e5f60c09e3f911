import { OptionValueError } from './option-value-error.js';
import { OPTIONS, optionsOf, wireUse, type OptionName, type OptionValue, type Wire } from './option-table.js';
import type { OutputOptions } from './output-options.js';

/** Whether a field was sent, as clients mean it: not absent, not JSON null, not an empty (or blank) string. */
export const isSet = (value: unknown): boolean => value !== undefined && value !== null && !(typeof value === 'string' && value.trim() === '');

/** Besides the fields: whether the request brought a background image as a file (remove.bg's `bg_image_file`). */
export interface ReadContext {
  backgroundFile?: boolean;
}

/**
 * Reads the options `wire` takes from a request's fields (JSON values or form text alike),
 * each with its kind's one reader, and puts each where its declaration says
 * (`option-table.ts`), most into the answer's spec; then the rules between them: one background at most, none with
 * `channels=alpha`, a `scale` without a `position` centred, a shadow only with `add_shadow`.
 * A field the wire does not take is ignored; a bad value throws an OptionValueError naming
 * the field and what it takes.
 *
 * @example readOptions({ format: 'jpg', bg_color: 'red', crop: '1' }, 'native')
 */
export function readOptions(fields: Readonly<Record<string, unknown>>, wire: Wire, context: ReadContext = {}): OutputOptions {
  const values: { [N in OptionName]?: OptionValue<N> } = {};
  for (const name of optionsOf(wire)) {
    const use = wireUse(name, wire)!;
    const sent = isSet(fields[name]) ? fields[name] : use.default;
    if (sent === undefined) continue;
    if (use.only && !use.only.includes(String(sent).trim().toLowerCase())) {
      throw new OptionValueError(OPTIONS[name].kind.problem, `${name} must be ${use.only.join(', ')} here, not ${JSON.stringify(sent).slice(0, 60)}.`);
    }
    (values as Record<string, unknown>)[name] = OPTIONS[name].kind.read(name, sent);
  }
  const set = (name: OptionName) => Object.hasOwn(values, name);

  const backgrounds = [...(context.backgroundFile ? ['bg_image_file'] : []), ...optionsOf(wire).filter((name) => set(name) && 'background' in OPTIONS[name])];
  if (backgrounds.length > 1) throw new OptionValueError('multiple_bg_sources', `Send at most one background, not ${backgrounds.join(' and ')}.`);
  if (values.channels === 'alpha' && backgrounds.length > 0) {
    throw new OptionValueError('invalid_channels', `channels=alpha answers the mask alone, which has no background: leave out ${backgrounds[0]}, or ask for rgba.`);
  }

  const options: OutputOptions = { answer: { channels: 'rgba' } };
  for (const name of optionsOf(wire)) {
    const apply = OPTIONS[name].apply as ((value: unknown, into: OutputOptions) => void) | undefined;
    if (set(name)) apply?.(values[name], options);
  }
  // The rules between options. A margin is the crop's. As on remove.bg, a scale without a
  // position centres the subject. A shadow's type and opacity are add_shadow's.
  if (values.crop) options.answer.crop = { margin: values.crop_margin ?? { value: 0, unit: 'px' } };
  const scale = values.scale;
  const position = set('position') ? values.position : scale !== undefined ? { x: 0.5, y: 0.5 } : undefined;
  if (scale !== undefined || position) options.answer.placement = { scale, position };
  if (values.add_shadow) options.answer.shadow = { kind: values.shadow_type ?? 'drop', opacity: values.shadow_opacity ?? 0.5 };
  return options;
}
