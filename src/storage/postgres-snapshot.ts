import {
  CompiledQuery,
  PostgresDialect,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { LAST_RESULT } from './query-modes.js';

/** The start of a read-only snapshot (storage/snapshot.ts), which SnapshotDriver defers. */
const SNAPSHOT_BEGIN = 'START TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY';

/**
 * PostgreSQL's dialect, whose read-only REPEATABLE READ transactions (the snapshots of reports,
 * usage and exports) send their START TRANSACTION with their first query rather than on its own:
 * in one round trip with it when that query is a LAST_RESULT text, just before it otherwise. The
 * snapshot is taken at the first query either way, not at the start. A transaction that runs no
 * query sends nothing at all.
 */
export class SnapshotPostgresDialect extends PostgresDialect {
  override createDriver(): Driver {
    return new SnapshotDriver(super.createDriver());
  }
}

class DeferredBeginConnection implements DatabaseConnection {
  begin: string | null = null;

  constructor(readonly inner: DatabaseConnection) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const begin = this.begin;
    if (begin === null) return this.inner.executeQuery<R>(compiled);
    this.begin = null;
    if (compiled.sql.startsWith(LAST_RESULT) && compiled.parameters.length === 0) {
      const statements = compiled.sql.slice(LAST_RESULT.length);
      return this.inner.executeQuery<R>(CompiledQuery.raw(`${LAST_RESULT}${begin}; ${statements}`));
    }
    await this.inner.executeQuery(CompiledQuery.raw(begin));
    return this.inner.executeQuery<R>(compiled);
  }

  async *streamQuery<R>(compiled: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    if (this.begin !== null) {
      await this.inner.executeQuery(CompiledQuery.raw(this.begin));
      this.begin = null;
    }
    yield* this.inner.streamQuery<R>(compiled, chunkSize);
  }
}

class SnapshotDriver implements Driver {
  constructor(private readonly inner: Driver) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new DeferredBeginConnection(await this.inner.acquireConnection());
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    if (settings.isolationLevel === 'repeatable read' && settings.accessMode === 'read only') {
      (connection as DeferredBeginConnection).begin = SNAPSHOT_BEGIN;
      return;
    }
    await this.inner.beginTransaction(connection, settings);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    if (!this.startedNothing(connection)) await this.inner.commitTransaction(connection);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (!this.startedNothing(connection)) await this.inner.rollbackTransaction(connection);
  }

  savepoint: Driver['savepoint'] = (connection, name, compile) =>
    this.supported(this.inner.savepoint).call(this.inner, connection, name, compile);
  rollbackToSavepoint: Driver['rollbackToSavepoint'] = (connection, name, compile) =>
    this.supported(this.inner.rollbackToSavepoint).call(this.inner, connection, name, compile);
  releaseSavepoint: Driver['releaseSavepoint'] = (connection, name, compile) =>
    this.supported(this.inner.releaseSavepoint).call(this.inner, connection, name, compile);

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection((connection as DeferredBeginConnection).inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }

  /** A savepoint method of the wrapped driver (PostgreSQL's has them all). */
  private supported<M>(method: M | undefined): M {
    if (method === undefined) throw new Error('savepoints are not supported by this driver');
    return method;
  }

  /** Whether the transaction on `connection` was deferred and ran no query (then forgotten). */
  private startedNothing(connection: DatabaseConnection): boolean {
    const deferred = connection as DeferredBeginConnection;
    if (deferred.begin === null) return false;
    deferred.begin = null;
    return true;
  }
}
