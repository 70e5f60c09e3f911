import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeConfig } from '../src/config.js';
import { ERRORS } from '../src/errors.js';
import { OPTION_FIELDS } from '../src/http/routes/option-fields.js';
import { MODEL_PRESETS } from '../src/model/model-presets.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const modelsDoc = readFileSync(new URL('../docs/models.md', import.meta.url), 'utf8');

/** The rows of the table between `<!-- name:start -->` and `<!-- name:end -->` of a document (README.md by default), as cells. */
function tableRows(name: string, document = readme): string[][] {
  const section = document.split(`<!-- ${name}:start -->`)[1]?.split(`<!-- ${name}:end -->`)[0];
  if (!section) throw new Error(`the document has no ${name} table`);
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()));
}

describe('README agrees with the code', () => {
  it('lists every error code with its status, and no other', () => {
    const documented = tableRows('errors').map(([code, status]) => [code.replaceAll('`', ''), Number(status)]);
    const registered = Object.entries(ERRORS).map(([code, entry]) => [code, entry.status]);
    expect(documented).toEqual(registered);
  });

  it('lists every output option the endpoints take, and no other', () => {
    const documented = tableRows('options').flatMap(([names]) => names.split(',').map((name) => name.replaceAll('`', '').trim()));
    expect(documented.sort()).toEqual(Object.keys(OPTION_FIELDS).sort());
  });

  it('lists every configuration variable, and no other', () => {
    const documented = tableRows('config').map(([variable]) => variable.replaceAll('`', ''));
    expect(documented).toEqual(describeConfig().map((field) => field.env));
  });

  it('documents numeric defaults as the schema has them', () => {
    for (const [variable, defaultCell] of tableRows('config')) {
      const field = describeConfig().find((f) => f.env === variable.replaceAll('`', ''))!;
      if (typeof field.default === 'number' && field.env !== 'CUTOUT_INFERENCE_THREADS') expect(defaultCell).toContain(`\`${field.default}\``);
    }
  });

  it('docs/models.md lists every preset with its input size, output, licence and hash, and no other', () => {
    const documented = tableRows('presets', modelsDoc).map(([name, , input, , output, licence, , hash, megabytes]) => [name.replaceAll('`', ''), input, output, licence, hash.replaceAll('`', ''), Number(megabytes)]);
    const presets = MODEL_PRESETS.map((preset) => [
      preset.name,
      `${preset.processing.inputSize}${preset.processing.fit === 'letterbox' ? ', letterboxed' : ''}`,
      `${preset.processing.outputIndex}, ${preset.processing.activation}`,
      preset.commercial ? preset.licence : `${preset.licence}, **non-commercial**`,
      preset.hash,
      preset.megabytes,
    ]);
    expect(documented).toEqual(presets);
  });
});
