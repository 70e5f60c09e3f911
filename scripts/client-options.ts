/**
 * Writes clients/typescript/src/output-options.ts from the option table
 * (src/options/option-table.ts), so that the SDK's `OutputOptions` are the native API's, each
 * with its type and its description. test/client/client-options.test.ts fails when the file
 * in the repository differs from what this would write.
 *
 *   npx tsx scripts/client-options.ts          # rewrite the file
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { OPTIONS, optionsOf } from '../src/options/option-table.js';

/** Where the SDK keeps its copy of the table's native options. */
export const CLIENT_OPTIONS_FILE = fileURLToPath(new URL('../clients/typescript/src/output-options.ts', import.meta.url));

/** `text` as the lines of a doc comment, indented by `indent`, at most 100 columns. */
function docComment(text: string, indent: string): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && indent.length + 3 + line.length + 1 + word.length > 100) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  lines.push(line);
  return lines.length === 1 ? `${indent}/** ${lines[0]} */` : [`${indent}/**`, ...lines.map((l) => `${indent} * ${l}`), `${indent} */`].join('\n');
}

/** The text of clients/typescript/src/output-options.ts for the table as it is now. */
export function clientOptionsSource(): string {
  const names = optionsOf('native');
  const fields = names.map((name) => `${docComment(OPTIONS[name].description, '  ')}\n  ${name}?: ${OPTIONS[name].kind.sdkType};`);
  return `// Generated from src/options/option-table.ts by \`npx tsx scripts/client-options.ts\`: do not edit.
// test/client/client-options.test.ts fails when this file and the server's table differ.

/**
 * The result a removal asks for: the API's output options, under the API's own names
 * (remove.bg's), so that its reference applies word for word. All optional; the server
 * checks the values and answers 400 \`invalid_request\` naming a bad one.
 */
export interface OutputOptions {
${fields.join('\n')}
}

/** The option names, to pick them out of an object that holds more. */
export const OUTPUT_OPTION_NAMES = [${names.map((name) => `'${name}'`).join(', ')}] as const satisfies readonly (keyof OutputOptions)[];

/** The options that were given (undefined ones left out), as JSON fields. */
export function outputOptionFields(options: OutputOptions): Record<string, string | number | boolean> {
  const fields: Record<string, string | number | boolean> = {};
  for (const name of OUTPUT_OPTION_NAMES) {
    const value = options[name];
    if (value !== undefined) fields[name] = value;
  }
  return fields;
}
`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await writeFile(CLIENT_OPTIONS_FILE, clientOptionsSource());
  console.log(`wrote ${CLIENT_OPTIONS_FILE}`);
}
