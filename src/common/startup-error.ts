import { inspect } from 'node:util';

/**
 * A failure at start-up that the operator can fix (configuration, data directory, port, database unreachable,
 * a migration that cannot run): reported as one readable line, without a stack trace.
 */
export class StartupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StartupError';
  }
}

const DEBUG_LEVELS = new Set(['debug', 'trace']);

/**
 * What to print when start-up fails: a StartupError's one line, with its stack and cause only under
 * LOG_LEVEL=debug (or trace); anything else (a bug) in full. Read from the raw environment: the configuration
 * itself may be what failed.
 */
export function describeStartupFailure(error: unknown, env: Record<string, string | undefined> = process.env): string {
  if (!(error instanceof StartupError)) return error instanceof Error ? (error.stack ?? error.message) : String(error);
  if (!DEBUG_LEVELS.has(env.LOG_LEVEL?.trim() ?? '')) return error.message;
  const cause =
    error.cause instanceof Error
      ? `\nCaused by: ${error.cause.stack ?? error.cause.message}`
      : error.cause
        ? `\nCaused by: ${describeCause(error.cause)}`
        : '';
  return `${error.stack}${cause}`;
}

/** A cause that is not an Error: a string as it is, anything else inspected (not `[object Object]`). */
const describeCause = (cause: unknown): string => (typeof cause === 'string' ? cause : inspect(cause));
