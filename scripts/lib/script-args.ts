import { parseArgs, type ParseArgsConfig } from 'node:util';

/**
 * A script's arguments read with `parseArgs`, or the exit code it should end with: 2 after
 * printing what was wrong and `usage` (an unknown or malformed option), 0 after printing
 * `usage` when `--help` was asked for (declare `help` among the options).
 *
 * @example
 * const args = scriptArgs({ args: argv, options: { help: { type: 'boolean', short: 'h' } } }, USAGE);
 * if (typeof args === 'number') return args;
 */
export function scriptArgs<T extends ParseArgsConfig>(config: T, usage: string): ReturnType<typeof parseArgs<T>> | number {
  let args: ReturnType<typeof parseArgs<T>>;
  try {
    args = parseArgs(config);
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${usage}`);
    return 2;
  }
  if ((args.values as { help?: boolean }).help) {
    console.log(usage);
    return 0;
  }
  return args;
}
