import {
  CompiledQuery,
  PostgresAdapter,
  sql,
  type Compilable,
  type InsertQueryBuilder,
  type InsertResult,
  type QueryCreator,
} from 'kysely';
import { sqliteHandle } from './sqlite.js';
import type { DbOrTrx } from './types.js';
import type { Database } from './schema.js';

/** The PostgreSQL type of a column, for the array that carries it. */
export type PgType = 'text' | 'bigint' | 'numeric' | 'double precision';

/**
 * `INSERT INTO table (…) <rows>` for many rows at once. SQLite gets a VALUES list. PostgreSQL gets
 * one array parameter per column, unnested: the statement's text is the same for any number of
 * rows, so it is prepared once per connection (storage/db.ts) instead of parsed and planned on
 * every batch, and building it does not grow with the rows. `columns` names every column the rows
 * carry, with its PostgreSQL type; `into` is where the statement starts (e.g. a WITH clause).
 */
export function insertRows<T extends keyof Database & string, R extends object>(
  db: DbOrTrx,
  table: T,
  columns: { readonly [K in keyof R & string]: PgType },
  rows: readonly R[],
  into: Pick<QueryCreator<Database>, 'insertInto'> = db,
): InsertQueryBuilder<Database, T, InsertResult> {
  const insert = into.insertInto(table);
  // The rows are the table's insertable rows; Kysely cannot see that through the generics.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return insert.values(rows as any);
  const names = Object.keys(columns) as Array<keyof R & string>;
  const arrays = names.map(
    (name) => sql`${rows.map((row) => row[name] ?? null)}::${sql.raw(columns[name])}[]`,
  );
  return (
    insert
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      .columns(names as any)
      .expression(
        sql`SELECT ${sql.join(names.map((name) => sql.ref(`t.${name}`)))} FROM unnest(${sql.join(arrays)}) AS t(${sql.join(names.map((name) => sql.id(name)))})`,
      )
  );
}

/**
 * SQL texts compiled once per adapter (the engines write placeholders apart) and key: building
 * and compiling a Kysely query costs more than running a small statement, and the hot ones run
 * on every request.
 */
export class CompiledTexts<K> {
  private readonly byAdapter = new WeakMap<object, Map<K, string>>();

  /** The text for `key`, from `compile` the first time (and every time when `keep` is false). */
  get(db: DbOrTrx, key: K, compile: () => string, keep = true): string {
    const adapter = db.getExecutor().adapter;
    let texts = this.byAdapter.get(adapter);
    if (texts === undefined) {
      texts = new Map();
      this.byAdapter.set(adapter, texts);
    }
    let text = texts.get(key);
    if (text === undefined) {
      text = compile();
      if (keep) texts.set(key, text);
    }
    return text;
  }
}

/** The text of each runEachRow statement. */
const oneRowStatements = new CompiledTexts<string>();

/**
 * A one-row statement over `columns` run once per row, in the caller's transaction; returns the
 * rows it returns (`RETURNING`, or a SELECT), in order. Meant for SQLite, which runs one
 * prepared one-row statement N times faster than an N-row VALUES list (25 events: in ~60 % of
 * the time), and the statement's text is built once per `name` (by `build`, from a row whose
 * every value is a placeholder; Kysely writes quoting and placeholders) instead of a query tree
 * of every value on every batch.
 */
export async function runEachRow<R extends object, O = unknown>(
  db: DbOrTrx,
  name: string,
  columns: { readonly [K in keyof R & string]: PgType },
  rows: readonly R[],
  build: (placeholders: R) => Compilable<unknown>,
): Promise<O[]> {
  const names = Object.keys(columns) as Array<keyof R & string>;
  const text = oneRowStatements.get(
    db,
    `${name} ${names.join()}`,
    () => build(Object.fromEntries(names.map((column) => [column, null])) as R).compile().sql,
  );
  const returned: O[] = [];
  const handle = sqliteHandle(db);
  if (handle !== null) {
    // In a transaction: the prepared statement straight away, row after row (see sqliteHandle).
    const statement = handle.prepare(text);
    for (const row of rows) {
      const values = names.map((column) => row[column] ?? null);
      if (statement.reader) returned.push(...(statement.all(values) as O[]));
      else statement.run(values);
    }
    return returned;
  }
  for (const row of rows) {
    const result = await db.executeQuery<O>(
      CompiledQuery.raw(
        text,
        names.map((column) => row[column] ?? null),
      ),
    );
    returned.push(...result.rows);
  }
  return returned;
}

/** SQLite only: `INSERT INTO table (…) VALUES (?, …)` run once per row (see runEachRow). */
export async function insertEachRow<T extends keyof Database & string, R extends object>(
  db: DbOrTrx,
  table: T,
  columns: { readonly [K in keyof R & string]: PgType },
  rows: readonly R[],
): Promise<void> {
  await runEachRow(db, `insert ${table}`, columns, rows, (placeholders) =>
    // The rows are the table's insertable rows; Kysely cannot see that through the generics.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    db.insertInto(table).values(placeholders as any),
  );
}
