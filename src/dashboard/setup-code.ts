import { randomInt, timingSafeEqual } from 'node:crypto';

// No 0/O, 1/I/L: the code is read from a log and typed by hand.
const ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';

/** Upper-cases and drops spaces and dashes, so that `abcd efgh` matches `ABCD-EFGH-…`. */
const canonical = (code: string) => code.toUpperCase().replace(/[\s-]/g, '');

/**
 * A new random setup code, as `XXXX-XXXX-XXXX`: 12 characters of a 31-letter alphabet,
 * about 60 bits.
 */
export function generateSetupCode(): string {
  const chars = Array.from({ length: 12 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
  return chars.replace(/(.{4})(?!$)/g, '$1-');
}

/**
 * The one-time code that protects the setup page of a fresh installation: printed in the
 * server's log at start, asked for when the first account is created, and void after. The
 * code lives in the store (see `prepareFirstAccount`), so that every replica of one
 * installation prints and asks for the same code, and only one of them can use it.
 */
export class SetupCode {
  #code: string | undefined;
  readonly #consume: (code: string) => Promise<boolean>;

  /**
   * @param code the code, or undefined when none is needed (an account exists)
   * @param consume voids the code wherever it is kept; true only for the one caller that voided it
   */
  constructor(code?: string, consume: (code: string) => Promise<boolean> = async () => true) {
    this.#code = code;
    this.#consume = consume;
  }

  /** The code, for the log; undefined once used (or when none was needed). */
  get value(): string | undefined {
    return this.#code;
  }

  /** Compares in constant time; false once the code has been used. */
  matches(candidate: string): boolean {
    if (!this.#code) return false;
    const a = Buffer.from(canonical(this.#code));
    const b = Buffer.from(canonical(candidate));
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /**
   * Voids the code: setup is done. False when it was void already, here or at another
   * replica that used it first; then this request must not create an account.
   */
  async use(): Promise<boolean> {
    const code = this.#code;
    if (!code) return false;
    this.#code = undefined;
    return this.#consume(code);
  }
}
