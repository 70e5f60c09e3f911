import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { OUTPUT_OPTION_NAMES } from '@cutout/client';
import { optionsOf } from '../../src/options/option-table.js';
import { CLIENT_OPTIONS_FILE, clientOptionsSource } from '../../scripts/client-options.js';

describe("the client's output options", () => {
  it("are the option table's native options, as scripts/client-options.ts generates them", async () => {
    const inRepository = await readFile(CLIENT_OPTIONS_FILE, 'utf8');
    expect(inRepository, 'clients/typescript/src/output-options.ts is out of date: run npx tsx scripts/client-options.ts').toBe(clientOptionsSource());
    expect([...OUTPUT_OPTION_NAMES]).toEqual(optionsOf('native'));
  });
});
