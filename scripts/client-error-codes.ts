/**
 * Writes clients/typescript/src/error-codes.ts from the server's registry (src/errors.ts), so
 * that the SDK's `code` union is the server's list. test/client-error-codes.test.ts fails
 * when the file in the repository differs from what this would write.
 *
 *   npx tsx scripts/client-error-codes.ts          # rewrite the file
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { ERRORS } from '../src/errors.js';

/** Where the SDK keeps its copy of the registry's codes. */
export const CLIENT_ERROR_CODES_FILE = fileURLToPath(new URL('../clients/typescript/src/error-codes.ts', import.meta.url));

/** The text of clients/typescript/src/error-codes.ts for the registry as it is now. */
export function clientErrorCodesSource(): string {
  const entries = Object.entries(ERRORS).map(([code, { status }]) => `  ${code}: ${status},`);
  return `// Generated from src/errors.ts by \`npx tsx scripts/client-error-codes.ts\`: do not edit.
// test/client-error-codes.test.ts fails when this file and the server's registry differ.

/** Every code a Cutout server answers with, and the HTTP status it comes with. */
export const SERVER_ERROR_STATUS = {
${entries.join('\n')}
} as const;

/** A \`code\` of the server's error registry. */
export type ServerErrorCode = keyof typeof SERVER_ERROR_STATUS;
`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await writeFile(CLIENT_ERROR_CODES_FILE, clientErrorCodesSource());
  console.log(`wrote ${CLIENT_ERROR_CODES_FILE}`);
}
