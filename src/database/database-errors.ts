/**
 * Errors that mean "the database cannot answer now" (down, restarting, overloaded, too slow), as opposed
 * to a bug in a query. They become 503s.
 */
const UNAVAILABLE_SQLSTATE_CLASSES = ['08', '53', '57']; // connection exception, insufficient resources, operator intervention (includes statement timeout)
const UNAVAILABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN']);
const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Connection is not established',
  'Cannot use a pool after calling end on the pool',
  'Client was closed and is not queryable',
];

export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const candidates: unknown[] = [error, (error as { driverError?: unknown }).driverError, error.cause];
  return candidates.some((candidate) => {
    if (!(candidate instanceof Error)) return false;
    const code = (candidate as { code?: unknown }).code;
    if (typeof code === 'string') {
      if (UNAVAILABLE_NODE_CODES.has(code)) return true;
      if (/^[0-9A-Z]{5}$/.test(code) && UNAVAILABLE_SQLSTATE_CLASSES.includes(code.slice(0, 2))) return true;
    }
    return UNAVAILABLE_MESSAGES.some((message) => candidate.message.includes(message));
  });
}
