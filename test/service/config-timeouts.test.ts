import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('timeout configuration', () => {
  it('has bounded defaults for every wait', () => {
    const config = loadConfig({});
    expect(config.database).toEqual({
      connectTimeoutMs: 5_000,
      statementTimeoutMs: 10_000,
      readyTimeoutMs: 2_000,
      busyTimeoutMs: 5_000,
    });
    expect(config.redisTimeoutMs).toBe(300);
    expect(config.http).toEqual({
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 72_000,
      idleTimeoutMs: 60_000,
    });
    expect(config.shutdownTimeoutMs).toBe(10_000);
  });

  it.each([
    'TALLY_DB_CONNECT_TIMEOUT_MS',
    'TALLY_DB_STATEMENT_TIMEOUT_MS',
    'TALLY_READYZ_TIMEOUT_MS',
    'TALLY_SQLITE_BUSY_TIMEOUT_MS',
    'TALLY_REDIS_TIMEOUT_MS',
    'TALLY_HTTP_REQUEST_TIMEOUT_MS',
    'TALLY_HTTP_HEADERS_TIMEOUT_MS',
    'TALLY_HTTP_KEEP_ALIVE_TIMEOUT_MS',
    'TALLY_HTTP_IDLE_TIMEOUT_MS',
    'TALLY_SHUTDOWN_TIMEOUT_MS',
  ])('stops with one line naming %s when it is not a sane number of milliseconds', (name) => {
    for (const bad of ['soon', '-1', '1.5', '99999999999']) {
      expect(() => loadConfig({ [name]: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ [name]: bad })).toThrow(new RegExp(`^${name} must be a whole number`));
    }
    expect(loadConfig({ [name]: '20000' })).toBeTruthy();
  });

  it('refuses a header timeout longer than the request timeout', () => {
    expect(() =>
      loadConfig({ TALLY_HTTP_HEADERS_TIMEOUT_MS: '5000', TALLY_HTTP_REQUEST_TIMEOUT_MS: '1000' }),
    ).toThrow(/^TALLY_HTTP_HEADERS_TIMEOUT_MS \(5000\) must not exceed TALLY_HTTP_REQUEST_TIMEOUT_MS/);
  });
});
