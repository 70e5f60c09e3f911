import type { Store } from '../store/store.js';
import { loadWebhookKey, parseWebhookKey } from './webhook-key.js';
import { deriveSigningSecret } from './webhook-signature.js';

/**
 * How long a replaced signing secret goes on signing beside the new one: a day, time to put
 * the new secret in the receiver's configuration and deploy it without refusing a delivery.
 */
export const WEBHOOK_SECRET_OVERLAP_MS = 24 * 3600 * 1000;
/**
 * How many replaced secrets may sign at once (so a webhook carries at most one signature
 * more): a secret made by mistake and replaced at once does not end the overlap of the one
 * the receiver still has, and repeated rotations cannot grow the header without end.
 */
export const REPLACED_SECRETS_KEPT = 2;

/** How a rotation treats the secret it replaces. */
export interface RotateOptions {
  /** True ends every earlier secret at once (it leaked) instead of after the overlap. */
  endEarlier?: boolean;
}

/**
 * User tokens' webhook signing secrets: made (or replaced) by a rotation, which shows the new
 * secret to its caller once, and derived again by the sender at each delivery. A replaced
 * secret goes on signing for {@link WEBHOOK_SECRET_OVERLAP_MS} unless the rotation ends it.
 * While the server's key itself is replaced (`previousKey`, CUTOUT_WEBHOOK_KEY_PREVIOUS), every
 * secret that signs is derived from both keys, the new key's first, so receivers that still
 * hold a secret of the old key accept deliveries until the operator ends that overlap. The
 * server's key is read at first use, so a process that never signs never makes the key file.
 *
 * @example const secret = await secrets.rotate(userTokenId) // show it once; the old one signs for 24 h more
 */
export class WebhookSecrets {
  readonly #store: Store;
  readonly #loadKey: () => Promise<Buffer>;
  readonly #previousKey: Buffer | undefined;
  readonly #now: () => Date;
  #key: Promise<Buffer> | undefined;

  constructor(store: Store, options: { dataDir: string; key?: string; previousKey?: string; now?: () => Date }) {
    this.#store = store;
    this.#loadKey = () => loadWebhookKey(options.dataDir, options.key);
    this.#previousKey = options.previousKey === undefined ? undefined : parseWebhookKey(options.previousKey, 'CUTOUT_WEBHOOK_KEY_PREVIOUS');
    this.#now = options.now ?? (() => new Date());
  }

  /** Replaces the token's secret with a new one and returns it; undefined for no such token. */
  async rotate(userTokenId: string, options: RotateOptions = {}): Promise<string | undefined> {
    const key = await this.#serverKey();
    const now = this.#now();
    const replacedSignsUntil = options.endEarlier ? null : new Date(now.getTime() + WEBHOOK_SECRET_OVERLAP_MS).toISOString();
    const generation = await this.#store.rotateWebhookSecret(userTokenId, { now: now.toISOString(), replacedSignsUntil, keepReplaced: REPLACED_SECRETS_KEPT });
    return generation === undefined ? undefined : deriveSigningSecret(key, userTokenId, generation);
  }

  /** The secret of the token's generation `generation`. */
  async secretOf(userTokenId: string, generation: number): Promise<string> {
    return deriveSigningSecret(await this.#serverKey(), userTokenId, generation);
  }

  /**
   * The secrets of these generations of the token's, in their order, for signing; during a
   * key replacement the same generations' secrets of the previous key follow them (a key equal
   * to the current one adds nothing).
   */
  async secretsOf(userTokenId: string, generations: readonly number[]): Promise<string[]> {
    if (generations.length === 0) return [];
    const key = await this.#serverKey();
    const keys = this.#previousKey && !this.#previousKey.equals(key) ? [key, this.#previousKey] : [key];
    return keys.flatMap((each) => generations.map((generation) => deriveSigningSecret(each, userTokenId, generation)));
  }

  #serverKey(): Promise<Buffer> {
    this.#key ??= this.#loadKey().catch((error: unknown) => {
      this.#key = undefined;
      throw error;
    });
    return this.#key;
  }
}
