import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The server's webhook key in the data directory, when CUTOUT_WEBHOOK_KEY does not give it. */
export const WEBHOOK_KEY_FILE = 'webhook.key';
const KEY_BYTES = 32;

/**
 * Reads a key given as 64 hex digits or 43 base64url characters (32 bytes either way).
 * Throws when it is neither, naming where it came from and never echoing it.
 */
export function parseWebhookKey(text: string, source: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : /^[A-Za-z0-9_-]{43}=?$/.test(trimmed) ? Buffer.from(trimmed, 'base64url') : undefined;
  if (!key || key.length !== KEY_BYTES) throw new Error(`${source} must hold 32 bytes as 64 hex digits or 43 base64url characters`);
  return key;
}

/**
 * The key every token's webhook signing secret is derived from: CUTOUT_WEBHOOK_KEY when set,
 * else `<dataDir>/webhook.key`, made on first use (32 random bytes, mode 0600). Replicas that
 * share the data directory share the file: it is written under another name and linked into
 * place, which fails for all but the first, so every process reads the same key.
 *
 * @example const key = await loadWebhookKey(config.dataDir, config.webhookKey)
 */
export async function loadWebhookKey(dataDir: string, fromEnv?: string): Promise<Buffer> {
  if (fromEnv !== undefined) return parseWebhookKey(fromEnv, 'CUTOUT_WEBHOOK_KEY');
  const path = join(dataDir, WEBHOOK_KEY_FILE);
  try {
    return parseWebhookKey(await readFile(path, 'utf8'), path);
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ENOENT') throw error;
  }
  await mkdir(dataDir, { recursive: true });
  const draft = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(draft, `${randomBytes(KEY_BYTES).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(draft, path);
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'EEXIST') throw error;
  } finally {
    await rm(draft, { force: true });
  }
  return parseWebhookKey(await readFile(path, 'utf8'), path);
}
