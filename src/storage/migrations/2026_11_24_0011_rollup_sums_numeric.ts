import { SqliteAdapter, sql, type Kysely } from 'kysely';

/**
 * Report rollup sums of micro-units that no 64-bit integer can hold (README "Limits"). One
 * event's hours or money saved reach 8.76e15 micro-units, so about 1,053 events at the maxima in
 * one rollup row overflow a bigint: PostgreSQL then refused the folding stage's upsert ("bigint
 * out of range") and the stage stalled for every organisation.
 *
 * - PostgreSQL: the hours and money sums become `numeric` (exact at any size); the event counts
 *   stay bigint (a count cannot reach 2^63). The values are kept exactly.
 * - SQLite: nothing to change. The columns have INTEGER affinity in a table that is not STRICT:
 *   an integer `+` that overflows gives a REAL, which the column keeps as it is (an integral REAL
 *   within 64 bits goes back to an integer); the folding stage and the reports sum with `total()`,
 *   exact integer arithmetic until 2^63 and never an "integer overflow" error (fold-rollups.ts).
 */
const MICRO_SUMS = ['hours_saved_micros', 'cost_saved_micros', 'agent_cost_micros'];
const OUTCOMES = ['success', 'needs_review', 'failure'];
const COLUMNS = ['', ...OUTCOMES.map((o) => `${o}_`)].flatMap((prefix) =>
  MICRO_SUMS.map((column) => `${prefix}${column}`),
);

export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) return;
  // One statement: the table and its primary key (which INCLUDEs the sums) are rewritten once.
  const changes = COLUMNS.map((column) => `ALTER COLUMN ${column} TYPE numeric`).join(', ');
  await sql`ALTER TABLE report_rollups ${sql.raw(changes)}`.execute(db);
  // A type change drops the columns' statistics: gather them again rather than leave the
  // report plans to guess until autovacuum comes by.
  await sql`ANALYZE report_rollups`.execute(db);
}
