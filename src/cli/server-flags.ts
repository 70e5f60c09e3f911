import { UsageError } from './usage-error.js';

/** The flags every command that talks to a server over HTTP takes. */
export const SERVER_FLAGS = {
  url: { type: 'string' },
  'token-id': { type: 'string' },
} as const;

/**
 * The server and the Token ID a command talks to it with: `--url`, else $CUTOUT_URL, else
 * the local default; `--token-id`, else $CUTOUT_TOKEN_ID (a usage error without either).
 */
export function serverOf(command: string, values: { url?: string; 'token-id'?: string }, env: NodeJS.ProcessEnv): { baseUrl: string; tokenId: string } {
  const tokenId = values['token-id'] ?? env.CUTOUT_TOKEN_ID;
  if (!tokenId) throw new UsageError(`${command} needs a Token ID: set CUTOUT_TOKEN_ID (or pass --token-id); \`cutout tokens create\` makes one`);
  return { baseUrl: values.url ?? env.CUTOUT_URL ?? 'http://127.0.0.1:8080', tokenId };
}
