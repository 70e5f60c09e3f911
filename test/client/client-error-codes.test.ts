import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { SERVER_ERROR_STATUS, type ServerErrorCode } from '@cutout/client';
import { ERRORS, type ErrorCode } from '../../src/errors.js';
import { CLIENT_ERROR_CODES_FILE, clientErrorCodesSource } from '../../scripts/client-error-codes.js';

// Checked by `npm run typecheck`: the client's union and the server's are the same type.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameCodes: Same<ServerErrorCode, ErrorCode> = true;

describe('the client\'s error codes', () => {
  it('are the server registry\'s, as scripts/client-error-codes.ts generates them', async () => {
    expect(sameCodes).toBe(true);
    const inRepository = await readFile(CLIENT_ERROR_CODES_FILE, 'utf8');
    expect(inRepository, 'clients/typescript/src/error-codes.ts is out of date: run npx tsx scripts/client-error-codes.ts').toBe(clientErrorCodesSource());
    expect(SERVER_ERROR_STATUS).toEqual(Object.fromEntries(Object.entries(ERRORS).map(([code, entry]) => [code, entry.status])));
  });
});
