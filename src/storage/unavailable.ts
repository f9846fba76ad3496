/** A database wait that ran out of time (answered 503 like an unreachable database). */
export class DatabaseTimeoutError extends Error {
  readonly code = 'TALLY_DB_TIMEOUT';
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_CANTOPEN',
  'SQLITE_IOERR',
  'SQLITE_FULL',
  'TALLY_DB_TIMEOUT',
  '57014',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/** True for errors that mean "the database cannot be reached right now" (answered with 503). */
export function isUnavailableError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  // SQLite's extended codes name their primary one first (SQLITE_BUSY_SNAPSHOT is a SQLITE_BUSY).
  const primary =
    typeof code === 'string' && code.startsWith('SQLITE_') ? code.split('_', 2).join('_') : code;
  if (typeof primary === 'string' && (UNAVAILABLE_CODES.has(primary) || primary.startsWith('08')))
    return true;
  const message = (error as { message?: unknown }).message;
  return (
    typeof message === 'string' &&
    /Connection terminated|timeout exceeded when trying to connect|connect ECONNREFUSED|Client has encountered a connection error|Client was closed and is not queryable|driver has already been destroyed/i.test(
      message,
    )
  );
}
