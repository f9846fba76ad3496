import type SQLite from 'better-sqlite3';
import { sql, SqliteAdapter, type Kysely } from 'kysely';
import type { Database } from './schema.js';

/**
 * SQLite keeps the tables a track request writes in a database file of their own, attached to
 * every connection under this schema name: `<file>-events` beside `<file>` (DESIGN §11, README
 * "SQLite's two files"). SQLite has one writer per file, so with everything in one file a
 * folding pass, which writes rollups, usage and webhook messages for a while (seconds during a
 * backfill), would hold every track request behind it. With two files the folding stage writes
 * the main file while tracking commits to this one; each reads the other's committed rows through WAL snapshots.
 *
 * Queries name tables without a schema, and SQLite finds them in whichever file holds them, so
 * no query changes. DDL is the exception: `CREATE INDEX` without a schema creates its index in
 * the main file and fails for a table in this one; a migration that indexes one of these tables
 * names the schema (`schemaOfTable`).
 */
export const EVENTS_SCHEMA = 'ingest';

/**
 * What a track request writes: the events, their first agents, the idempotency keys; and what an
 * OpenTelemetry export writes beside its events (otlp/held.ts).
 */
export const EVENTS_FILE_TABLES = [
  'events',
  'agents',
  'idempotency_keys',
  'otlp_held_spans',
  'otlp_done_traces',
  'otlp_counters',
] as const;

/** The events file of a SQLite database file (in memory: a database of the connection's own). */
export function eventsFilePath(path: string): string {
  return path === ':memory:' ? ':memory:' : `${path}-events`;
}

/** Attaches the events file to a connection, with the main file's durability settings. */
export function attachEventsFile(database: SQLite.Database, path: string): void {
  database.prepare(`ATTACH DATABASE ? AS ${EVENTS_SCHEMA}`).run(eventsFilePath(path));
  if (path === ':memory:') return;
  database.pragma(`${EVENTS_SCHEMA}.journal_mode = WAL`);
  database.pragma(`${EVENTS_SCHEMA}.synchronous = NORMAL`);
  database.pragma(`${EVENTS_SCHEMA}.cache_size = -65536`);
}

/** SQLite: the schema (`main` or EVENTS_SCHEMA) that holds `table` now. */
export async function schemaOfTable(db: Kysely<Database>, table: string): Promise<string> {
  return (await tablesIn(db, EVENTS_SCHEMA)).has(table) ? EVENTS_SCHEMA : 'main';
}

async function tablesIn(db: Kysely<Database>, schema: string): Promise<Set<string>> {
  const { rows } = await sql<{ name: string }>`
    SELECT name FROM ${sql.table(`${schema}.sqlite_master`)} WHERE type = 'table'`.execute(db);
  return new Set(rows.map((r) => r.name));
}

async function lockMainFile(db: Kysely<Database>): Promise<void> {
  await sql`UPDATE main.fold_state SET folded_at = folded_at WHERE id = 1`.execute(db);
}

async function rowCount(db: Kysely<Database>, schema: string, table: string): Promise<number> {
  const { rows } = await sql<{
    n: number;
  }>`SELECT count(*) AS n FROM ${sql.table(`${schema}.${table}`)}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/**
 * Moves EVENTS_FILE_TABLES from the main file into the events file, where a database created or
 * migrated before the split still has them (after the migrations: they create tables in the
 * main file). Their rows, columns and indexes move exactly, by the main file's own DDL.
 *
 * SQLite's commit over two WAL files is atomic per file, not across them, so the move is two
 * transactions, each writing one file (beside a write to the main file that changes nothing,
 * which takes its lock): the copy (a copy left over from an interrupted move is replaced), then
 * the drop of the main file's tables, which first checks that the copy holds every row. A crash
 * between them leaves both, and the next start copies again; no crash can leave the rows in
 * neither file.
 */
export async function moveToEventsFile(db: Kysely<Database>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return;
  for (let attempt = 1; ; attempt++) {
    const main = await tablesIn(db, 'main');
    const moving = EVENTS_FILE_TABLES.filter((t) => main.has(t));
    if (moving.length === 0) {
      if ((await tablesIn(db, EVENTS_SCHEMA)).has('events')) return;
      // Migrated, yet neither file holds the events: the events file was lost (a copy of the
      // main file alone). Stop rather than start without the events.
      const { rows } = await sql<{ name: string; file: string }>`PRAGMA database_list`.execute(db);
      const events = rows.find((r) => r.name === EVENTS_SCHEMA)?.file ?? '';
      throw new Error(
        `The events file ${events} holds no events: a SQLite database is two files, FILE and FILE-events; keep them together.`,
      );
    }
    await db.transaction().execute(async (trx) => {
      // The main file's write lock first (a write that changes nothing): processes starting
      // together move one after the other, and the tables read here are the ones copied.
      await lockMainFile(trx);
      const present = await tablesIn(trx, 'main');
      for (const table of moving.filter((t) => present.has(t))) {
        const { rows } = await sql<{ type: string; sql: string | null }>`
          SELECT type, sql FROM main.sqlite_master
          WHERE tbl_name = ${table} AND sql IS NOT NULL
          ORDER BY type = 'table' DESC, name`.execute(trx);
        await sql`DROP TABLE IF EXISTS ${sql.table(`${EVENTS_SCHEMA}.${table}`)}`.execute(trx);
        for (const { type, sql: ddl } of rows) {
          // `CREATE TABLE x (…)` / `CREATE [UNIQUE] INDEX x ON t (…)`: the schema goes before the
          // new object's name (an index's table is then looked up in that schema).
          const pattern =
            type === 'table'
              ? /^CREATE TABLE\s+(IF NOT EXISTS\s+)?/i
              : /^CREATE (UNIQUE )?INDEX\s+(IF NOT EXISTS\s+)?/i;
          const qualified = (ddl ?? '').replace(pattern, (head) => `${head}${EVENTS_SCHEMA}.`);
          if (qualified === ddl) throw new Error(`cannot move ${table}: unexpected DDL ${ddl}`);
          await sql.raw(qualified).execute(trx);
        }
        await sql`INSERT INTO ${sql.table(`${EVENTS_SCHEMA}.${table}`)} SELECT * FROM ${sql.table(`main.${table}`)}`.execute(
          trx,
        );
      }
    });
    const moved = await db.transaction().execute(async (trx) => {
      // Under the main file's write lock, no process adds a row to the main file's tables after
      // the check (the tables only grow: a count that matches is the same rows).
      await lockMainFile(trx);
      const present = await tablesIn(trx, 'main');
      const left = moving.filter((t) => present.has(t));
      for (const table of left) {
        if ((await rowCount(trx, 'main', table)) !== (await rowCount(trx, EVENTS_SCHEMA, table)))
          return false;
      }
      for (const table of left) await sql`DROP TABLE ${sql.table(`main.${table}`)}`.execute(trx);
      return true;
    });
    if (moved) return;
    if (attempt >= 5) throw new Error('the events tables kept changing while they were moved; start again');
  }
}
