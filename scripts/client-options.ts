/**
 * Writes clients/typescript/src/output-options.ts from the option table
 * (src/options/option-table.ts), so that the SDK's `OutputOptions` are the native API's, each
 * with its description and the type of the JSON its kind's schema allows. test/client/client-options.test.ts fails when the file
 * in the repository differs from what this would write.
 *
 *   npx tsx scripts/client-options.ts          # rewrite the file
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { TSchema } from 'typebox';
import { OPTIONS, optionsOf } from '../src/options/option-table.js';

/** Where the SDK keeps its copy of the table's native options. */
export const CLIENT_OPTIONS_FILE = fileURLToPath(new URL('../clients/typescript/src/output-options.ts', import.meta.url));

/**
 * The TypeScript type of the JSON a schema allows, for the subset the value kinds use
 * (booleans, integers, strings with or without a list of words, unions of them): a union
 * that holds any string is `string`, whatever words it also lists.
 *
 * @example typeScriptOf(Type.Union([Type.Integer(), Type.String()])) // 'number | string'
 */
export function typeScriptOf(schema: TSchema): string {
  const node = schema as { type?: string; enum?: readonly unknown[]; anyOf?: TSchema[] };
  if (node.anyOf) {
    const members = [...new Set(node.anyOf.flatMap((member) => typeScriptOf(member).split(' | ')))];
    return (members.includes('string') ? members.filter((member) => !member.startsWith("'")) : members).join(' | ');
  }
  if (node.enum) return node.enum.map((word) => `'${String(word)}'`).join(' | ');
  if (node.type === 'integer' || node.type === 'number') return 'number';
  if (node.type === 'boolean' || node.type === 'string') return node.type;
  throw new Error(`no TypeScript type for the schema ${JSON.stringify(schema)}`);
}

/**
 * The schema's limits in words, for the doc comment: an integer's range, a word's length and
 * pattern (the patterns of lengths and percents stay in the OpenAPI document, too long to read).
 */
export function limitsOf(schema: TSchema): string {
  const node = schema as { type?: string; minimum?: number; maximum?: number; maxLength?: number; pattern?: string; anyOf?: TSchema[] };
  if (node.anyOf) return node.anyOf.map(limitsOf).filter(Boolean).join(' ');
  if (node.type === 'integer' && node.minimum !== undefined && node.maximum !== undefined) return `As a number: ${node.minimum} to ${node.maximum}.`;
  if (node.type === 'string' && node.maxLength !== undefined) return `At most ${node.maxLength} characters${node.pattern ? `, matching \`${node.pattern}\`` : ''}.`;
  return '';
}

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
  const fields = names.map((name) => `${docComment(`${OPTIONS[name].description} ${limitsOf(OPTIONS[name].kind.schema)}`.trim(), '  ')}\n  ${name}?: ${typeScriptOf(OPTIONS[name].kind.schema)};`);
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
