import type { Logger } from '@nestjs/common';
import { ProviderFailure } from './answerer';

/** Logs a provider's failure by its kind and HTTP status (or an error's name and code): never its text, which may be the provider's. */
export function logProviderFailure(logger: Logger, error: unknown, message: string): void {
  if (error instanceof ProviderFailure) {
    logger.warn({ provider: { failure: error.kind, status: error.status } }, message);
  } else {
    const { name, code } = (error ?? {}) as { name?: unknown; code?: unknown };
    logger.error(
      { error: { name: typeof name === 'string' ? name : undefined, code: typeof code === 'string' ? code : undefined } },
      message,
    );
  }
}
