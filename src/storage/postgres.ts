import { Kysely } from 'kysely';
import pg from 'pg';
import type { DatabaseTimeouts } from '../config.js';
import { SnapshotPostgresDialect } from './postgres-snapshot.js';
import { ARRAY_ROWS, LAST_RESULT } from './query-modes.js';
import type { Database } from './schema.js';
import type { Storage } from './types.js';
import { DatabaseTimeoutError } from './unavailable.js';

// int8 and numeric come back as strings by default; every value we keep fits in 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

/** How much longer than `statement_timeout` the client waits before it drops the connection. */
const CLIENT_GRACE_MS = 1_000;

export interface PostgresOptions {
  schema?: string;
  poolSize?: number;
  onConnectionError?: (error: Error) => void;
}

/** Opens a pool on a PostgreSQL server, its connections adjusted (see below). */
export function openPostgres(
  url: string,
  timeouts: DatabaseTimeouts,
  options: PostgresOptions = {},
): Storage {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 20,
    // Bounds both opening a connection and waiting for a free one in the pool.
    connectionTimeoutMillis: timeouts.connectTimeoutMs,
    // A dead peer (a partition) is noticed by the kernel, not only by the next query's timer.
    keepAlive: true,
    // A session the client lost mid-transaction (a partition) must not hold its locks until the
    // server's keepalive notices, hours later.
    ...(timeouts.statementTimeoutMs > 0
      ? {
          statement_timeout: timeouts.statementTimeoutMs,
          idle_in_transaction_session_timeout: 2 * timeouts.statementTimeoutMs,
        }
      : {}),
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  // A connection the server drops (a restart: 57P01, or a reset) emits `error` on its client,
  // idle in the pool or checked out by Kysely between two queries. An `error` event without a
  // listener kills the process; the queries on that client fail on their own and answer 503.
  const onConnectionError = options.onConnectionError ?? (() => undefined);
  pool.on('error', onConnectionError);
  pool.on('connect', (client) => {
    client.on('error', onConnectionError);
    reusePreparedStatements(client);
    if (timeouts.statementTimeoutMs > 0) boundQueries(client, timeouts.statementTimeoutMs + CLIENT_GRACE_MS);
  });
  const db = new Kysely<Database>({ dialect: new SnapshotPostgresDialect({ pool }) });
  return { engine: 'postgres', db, reader: null, tracker: null, close: () => db.destroy() };
}

/**
 * `statement_timeout` ends a slow statement on a server that answers; a server that stopped
 * answering (a network partition) needs a timer on our side. When it fires, the connection is
 * destroyed rather than left with a query in flight: its pending queries fail, and the pool
 * drops the client instead of handing it out again (pg-pool checks `_queryable` on release).
 */
function boundQueries(client: pg.PoolClient, timeoutMs: number): void {
  type Query = (text: unknown, values?: unknown) => unknown;
  const target = client as unknown as {
    query: Query;
    connection?: { stream?: { destroy(error?: Error): void } };
  };
  const query = target.query.bind(client);
  target.query = (text, values) => {
    const result = query(text, values);
    // Only Kysely's plain queries return a promise; cursors (streamed exports) bring their own pace.
    if (typeof text !== 'string' || !(result instanceof Promise)) return result;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const error = new DatabaseTimeoutError(`The database did not answer within ${timeoutMs} ms.`);
        reject(error);
        target.connection?.stream?.destroy(error);
      }, timeoutMs);
      result.then(resolve, reject).finally(() => clearTimeout(timer));
    });
  };
}

const preparedNames = new Map<string, string>();
const MAX_PREPARED = 100;
const MAX_PREPARED_PARAMETERS = 64;

/**
 * PostgreSQL parses and plans an unnamed statement on every run, which costs more than running
 * the small reads of the hot path (key lookup, catalogue and webhook reads) and as much as the
 * tracking write (its rows go in as arrays, storage/insert-rows.ts). Statements with a few
 * parameters are prepared under a name, once per connection, and reused. Bounds: at most
 * MAX_PREPARED statement texts (server memory per connection; first come, first prepared);
 * multi-row VALUES lists, whose text changes with their row count, mostly have more parameters
 * than MAX_PREPARED_PARAMETERS and stay unnamed; and so does any
 * `*`: a prepared statement whose columns change (another instance migrating) fails with
 * "cached plan must not change result type".
 */
function reusePreparedStatements(client: pg.PoolClient): void {
  type Query = (text: unknown, values?: unknown) => unknown;
  const target = client as unknown as { query: Query };
  const query = target.query.bind(client);
  target.query = (text, values) => {
    if (typeof text === 'string' && text.startsWith(LAST_RESULT)) {
      const results = query(text) as Promise<pg.QueryResult | pg.QueryResult[]>;
      return results.then((r) => (Array.isArray(r) ? r[r.length - 1] : r));
    }
    if (typeof text === 'string' && text.startsWith(ARRAY_ROWS)) {
      // Never named: reports are planned for their own parameters, which a generic plan of a
      // large report serves badly.
      return query({ text, values, rowMode: 'array' });
    }
    if (typeof text !== 'string' || !Array.isArray(values) || values.length === 0) return query(text, values);
    let name = preparedNames.get(text);
    if (name === undefined) {
      if (
        preparedNames.size >= MAX_PREPARED ||
        values.length > MAX_PREPARED_PARAMETERS ||
        text.includes('*')
      ) {
        return query(text, values);
      }
      name = `tally_${preparedNames.size}`;
      preparedNames.set(text, name);
    }
    return query({ name, text, values });
  };
}
