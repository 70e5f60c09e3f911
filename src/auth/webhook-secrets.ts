import type { Store } from '../store/store.js';
import { loadWebhookKey } from './webhook-key.js';
import { deriveSigningSecret } from './webhook-signature.js';

/**
 * User tokens' webhook signing secrets: made (or replaced) by a rotation, which shows the new
 * secret to its caller once, and derived again by the sender at each delivery. The server's
 * key is read at first use, so a process that never signs never makes the key file.
 *
 * @example const secret = await secrets.rotate(userTokenId) // show it once; the old one stops working
 */
export class WebhookSecrets {
  readonly #store: Store;
  readonly #loadKey: () => Promise<Buffer>;
  #key: Promise<Buffer> | undefined;

  constructor(store: Store, options: { dataDir: string; key?: string }) {
    this.#store = store;
    this.#loadKey = () => loadWebhookKey(options.dataDir, options.key);
  }

  /** Replaces the token's secret with a new one and returns it; undefined for no such token. */
  async rotate(userTokenId: string): Promise<string | undefined> {
    const key = await this.#serverKey();
    const generation = await this.#store.rotateWebhookSecret(userTokenId);
    return generation === undefined ? undefined : deriveSigningSecret(key, userTokenId, generation);
  }

  /** The secret of the token's generation `generation`, for signing. */
  async secretOf(userTokenId: string, generation: number): Promise<string> {
    return deriveSigningSecret(await this.#serverKey(), userTokenId, generation);
  }

  #serverKey(): Promise<Buffer> {
    this.#key ??= this.#loadKey().catch((error: unknown) => {
      this.#key = undefined;
      throw error;
    });
    return this.#key;
  }
}
