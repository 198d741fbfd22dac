/**
 * Errors that mean "the database cannot answer now" (down, restarting, overloaded, too slow), as opposed
 * to a bug in a query. They become 503s.
 */
const UNAVAILABLE_SQLSTATE_CLASSES = ['08', '53', '57']; // connection exception, insufficient resources, operator intervention (includes statement timeout)
const UNAVAILABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN']);
/** pg's error when a query's client-side read timeout (`query_timeout`) expires; Database.stream's too. */
export const READ_TIMEOUT_MESSAGE = 'Query read timeout';

const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Connection is not established',
  'Cannot use a pool after calling end on the pool',
  'Client was closed and is not queryable',
  READ_TIMEOUT_MESSAGE, // the client-side query_timeout: the server stopped answering
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

/** A write PostgreSQL refused because of a value: answered as the client's fault, never a 500. */
export interface DatabaseRefusal {
  status: 400 | 409;
  message: string;
}

const UNIQUE_VIOLATION = '23505';

/** The SQLSTATE of a PostgreSQL error: TypeORM's QueryFailedError (`.code`, `.driverError.code`) or pg's DatabaseError (`.code`). */
function sqlState(error: ErrorLike): string | undefined {
  for (const candidate of [error, error.driverError, error.cause]) {
    if (isErrorLike(candidate) && typeof candidate.code === 'string' && /^[0-9A-Z]{5}$/.test(candidate.code) && /^\d/.test(candidate.code))
      return candidate.code;
  }
  return undefined;
}

/**
 * SQLSTATE class 22 (data exception: a value too long, out of range, malformed) is a 400; class 23 (integrity
 * constraint violation) a 409 for a unique violation and a 400 otherwise. Validation should have caught
 * every one of them first: this is the safety net that keeps a missed rule from becoming a 500. The
 * messages are generic on purpose: PostgreSQL's own echo the values.
 */
export function databaseRefusal(error: unknown): DatabaseRefusal | undefined {
  if (!isErrorLike(error)) return undefined;
  const code = sqlState(error);
  if (code === UNIQUE_VIOLATION) return { status: 409, message: 'The request conflicts with data already stored' };
  if (code?.startsWith('22') || code?.startsWith('23')) return { status: 400, message: 'A value in the request cannot be stored' };
  return undefined;
}
