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
  'Query read timeout', // the client-side query_timeout: the server stopped answering
  'timeout expired', // the connection attempt timed out
];

interface ErrorLike {
  code?: unknown;
  message?: unknown;
  driverError?: unknown;
  cause?: unknown;
}

// Duck-typed rather than `instanceof Error`: socket errors can come from another realm (e.g. under Jest).
const isErrorLike = (value: unknown): value is ErrorLike => typeof value === 'object' && value !== null;

function isUnavailableError({ code, message }: ErrorLike): boolean {
  if (typeof code === 'string') {
    if (UNAVAILABLE_NODE_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code) && UNAVAILABLE_SQLSTATE_CLASSES.includes(code.slice(0, 2))) return true;
  }
  return typeof message === 'string' && UNAVAILABLE_MESSAGES.some((known) => message.includes(known));
}

export function isDatabaseUnavailable(error: unknown): boolean {
  if (!isErrorLike(error)) return false;
  return [error, error.driverError, error.cause].some((candidate) => isErrorLike(candidate) && isUnavailableError(candidate));
}
