import { describe, expect, it } from 'vitest';
import { describeConfig } from '../src/config.js';
import { ERRORS } from '../src/errors.js';
import { OPTION_FIELDS } from '../src/api/option-schemas.js';
import { MODEL_PRESETS } from '../src/model/model-presets.js';
import { readDoc, tableRows } from './helpers/doc-tables.js';
import { OPTION_DOCS, writtenDoc } from '../scripts/docs/option-docs.js';

const apiDoc = readDoc('docs/api.md');
const configurationDoc = readDoc('docs/configuration.md');
const modelsDoc = readDoc('docs/models.md');

describe('the docs agree with the code', () => {
  it('docs/api.md lists every error code with its status, and no other', () => {
    const documented = tableRows('errors', apiDoc).map(([code, status]) => [code.replaceAll('`', ''), Number(status)]);
    const registered = Object.entries(ERRORS).map(([code, entry]) => [code, entry.status]);
    expect(documented).toEqual(registered);
  });

  it("docs/api.md's option table and docs/configuration.md's memory formula are what scripts/docs/option-docs.ts writes from the code", async () => {
    for (const entry of OPTION_DOCS) {
      const { now, written } = await writtenDoc(entry);
      expect(now, `${entry.path}'s ${entry.section} section is out of date: run npx tsx scripts/docs/option-docs.ts`).toBe(written);
    }
    // The option table has a row for every option the native endpoints take.
    const documented = tableRows('options', apiDoc).map(([name]) => name.replaceAll('`', ''));
    expect(documented).toEqual(Object.keys(OPTION_FIELDS));
  });

  it('docs/configuration.md lists every configuration variable, and no other', () => {
    const documented = tableRows('config', configurationDoc).map(([variable]) => variable.replaceAll('`', ''));
    expect(documented).toEqual(describeConfig().map((field) => field.env));
  });

  const HOST_DERIVED = new Set(['CUTOUT_INFERENCE_THREADS', 'CUTOUT_INFERENCE_CONCURRENCY', 'CUTOUT_FINISH_THREADS']);
  it('documents numeric defaults as the schema has them', () => {
    for (const [variable, defaultCell] of tableRows('config', configurationDoc)) {
      const field = describeConfig().find((f) => f.env === variable.replaceAll('`', ''))!;
      // The thread counts are the host's (threadDefaults): their cells give the rule, and 2 cores'.
      if (typeof field.default === 'number' && !HOST_DERIVED.has(field.env)) expect(defaultCell).toContain(`\`${field.default}\``);
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
