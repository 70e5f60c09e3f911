/** A command line that cannot be run as typed: the CLI prints the message and its usage, and exits with 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
