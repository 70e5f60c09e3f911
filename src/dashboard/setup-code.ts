import { randomInt, timingSafeEqual } from 'node:crypto';

// No 0/O, 1/I/L: the code is read from a log and typed by hand.
const ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';

/** Upper-cases and drops spaces and dashes, so that `abcd efgh` matches `ABCD-EFGH-…`. */
const canonical = (code: string) => code.toUpperCase().replace(/[\s-]/g, '');

/**
 * The one-time code that protects the setup page of a fresh installation: printed in the
 * server's log at start, asked for when the first account is created, and void after.
 * About 60 bits: 12 characters of a 31-letter alphabet.
 */
export class SetupCode {
  #code: string | undefined;

  constructor(code?: string) {
    this.#code = code;
  }

  /** A new random code, as `XXXX-XXXX-XXXX`. */
  static generate(): SetupCode {
    const chars = Array.from({ length: 12 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
    return new SetupCode(chars.replace(/(.{4})(?!$)/g, '$1-'));
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

  /** Voids the code: setup is done. */
  use(): void {
    this.#code = undefined;
  }
}
