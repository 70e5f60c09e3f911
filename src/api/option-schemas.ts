import Type, { type TSchema } from 'typebox';
import { OPTIONS, optionsOf } from '../options/option-table.js';
import type { OutputOptions } from '../options/output-options.js';
import { isSet, readOptions } from '../options/read-options.js';

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

/** Options read from a body, with the client's own words for them: what a job keeps, to read them again with the same readers when it runs. */
export type TakenOptions = OutputOptions & { readonly sent: Readonly<Record<string, unknown>> };

/**
 * Reads the native options of a JSON body or a form's fields (a bad value throws the same
 * 400 on every endpoint, removal or job) and takes them out of it, so that the route's schema
 * checks only the rest: a value is checked once, by its reader. Returns the options read,
 * and as `sent` the fields as the client sent them (the unset ones left out).
 *
 * @example const { answer, sent } = takeOptions(body) // sent: { format: 'webp', crop: true }
 */
export function takeOptions(body: Record<string, unknown>): TakenOptions {
  const options = readOptions(body, 'native');
  const sent: Record<string, unknown> = {};
  for (const name of NATIVE_OPTIONS) {
    if (isSet(body[name])) sent[name] = body[name];
    delete body[name];
  }
  return { ...options, sent };
}
