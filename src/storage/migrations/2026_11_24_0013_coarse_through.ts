import { sql, type Kysely } from 'kysely';

const DAY_MS = 86_400_000;

/**
 * Week rollup rows are kept only for weeks that have ended (DESIGN §11, rollups.ts
 * coarseThroughAt): an event of the current week writes no week rows, and the folding stage
 * builds a week's rows from its days' when it ends. `fold_state` records how far that has got:
 * every week ending by `coarse_through` (an epoch day, the first of a week cut at month ends) has
 * complete rows, and reports read week rows of those weeks only.
 *
 * A database with rollups has every week's rows complete, so `coarse_through` starts at the
 * current week: reports read exactly what they read before. The rows of the current week are
 * rebuilt from its days' rows when it ends. An empty database starts at day 0. There is no way
 * down: the code before it would read the current week's partial rows.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE fold_state ADD COLUMN coarse_through bigint NOT NULL DEFAULT 0`.execute(db);
  const { rows } = await sql`SELECT 1 AS one FROM report_rollups LIMIT 1`.execute(db);
  if (rows.length === 0) return;
  const today = Math.floor(Date.now() / DAY_MS);
  const date = new Date(today * DAY_MS);
  const monthStart = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) / DAY_MS;
  // Epoch day 0 was a Thursday: day − (day + 3) mod 7 is the Monday of its ISO week.
  const monday = today - ((today + 3) % 7);
  await sql`UPDATE fold_state SET coarse_through = ${Math.max(monday, monthStart)}`.execute(db);
}
