import Type, { type TSchema } from 'typebox';
import { OPTIONS, optionsOf } from '../options/option-table.js';
import type { OutputOptions } from '../options/output-options.js';
import { readOptions } from '../options/read-options.js';

const NATIVE_OPTIONS = optionsOf('native');

/**
 * The native options as JSON fields of the url and base64 endpoints, from the option table:
 * each with its description and how JSON should send it. They describe: the table's readers
 * check the values, and take the options out of the body before its schema checks the rest.
 */
export const OPTION_FIELDS: Record<string, TSchema> = Object.fromEntries(
  NATIVE_OPTIONS.map((name) => {
    const { kind, description, example } = OPTIONS[name];
    return [name, Type.Optional({ ...kind.schema, description, ...(example && { examples: [example] }) })];
  }),
);

/** The same options as form fields of the upload: every value is text. */
export const OPTION_FORM_FIELDS: Record<string, TSchema> = Object.fromEntries(
  NATIVE_OPTIONS.map((name) => {
    const { kind, description } = OPTIONS[name];
    return [name, Type.Optional(Type.String({ description: `${description} (As a form field: ${kind.flag === 'boolean' ? 'true or false, 1 or 0' : 'text'}.)` }))];
  }),
);

/** How many option fields the upload may carry: the multipart plugin's field limit follows. */
export const NATIVE_OPTION_COUNT = NATIVE_OPTIONS.length;

/**
 * Reads the native options of a JSON body and takes them out of it, so that the route's
 * schema checks only the image's own field: a value is checked once, by its reader.
 */
export function takeOptions(body: Record<string, unknown>): OutputOptions {
  const options = readOptions(body, 'native');
  for (const name of NATIVE_OPTIONS) delete body[name];
  return options;
}
