import { describe, expect, it } from 'vitest';
import { DatabaseTimeoutError, isUnavailableError } from '../../src/storage/db.js';

const withCode = (code: string) => Object.assign(new Error(code), { code });

describe('errors that mean "the database cannot be reached right now" (503)', () => {
  it.each([
    ['a refused connection', withCode('ECONNREFUSED')],
    ['a reset connection', withCode('ECONNRESET')],
    ['admin_shutdown (pg_ctl stop)', withCode('57P01')],
    ['cannot_connect_now (starting up)', withCode('57P03')],
    ['a connection exception', withCode('08006')],
    ['statement_timeout', withCode('57014')],
    ['our own wait timing out', new DatabaseTimeoutError('no answer')],
    ['a dropped connection', new Error('Connection terminated unexpectedly')],
    ['the pool waiting too long', new Error('timeout exceeded when trying to connect')],
    ['a connect timeout', new Error('Connection terminated due to connection timeout')],
    [
      'a client dropped after an error',
      new Error('Client has encountered a connection error and is not queryable'),
    ],
    ['SQLite locked by another process', withCode('SQLITE_BUSY')],
    ['a SQLite snapshot another process wrote past', withCode('SQLITE_BUSY_SNAPSHOT')],
    ['a SQLite write that failed on disk', withCode('SQLITE_IOERR_WRITE')],
  ])('%s', (_what, error) => {
    expect(isUnavailableError(error)).toBe(true);
  });

  it.each([
    ['a unique violation', withCode('23505')],
    ['a bad value', withCode('22P02')],
    ['a programming error', new TypeError('x is undefined')],
    ['not an error', 'ECONNREFUSED'],
    ['a SQLite constraint', withCode('SQLITE_CONSTRAINT_UNIQUE')],
  ])('but not %s', (_what, error) => {
    expect(isUnavailableError(error)).toBe(false);
  });
});
