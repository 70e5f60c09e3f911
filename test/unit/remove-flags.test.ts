import { describe, expect, it } from 'vitest';
import { REMOVE_USAGE } from '../../src/cli/remove-command.js';
import { OPTIONS, optionsOf } from '../../src/options/option-table.js';

describe("cutout remove's flags", () => {
  it('has one for every native option of the table, shown in its help', () => {
    for (const name of optionsOf('native')) {
      const flag = OPTIONS[name].flag ?? name.replaceAll('_', '-');
      expect(REMOVE_USAGE, name).toMatch(new RegExp(`^  --${flag}\\b`, 'm'));
    }
  });
});
