import { sql, type Kysely } from 'kysely';

/**
 * Month rollup rows hold the days before today only (DESIGN §11, rollups.ts monthsThroughAt):
 * an event of today writes no month rows, and the folding stage adds a day's rows to its month's
 * when the day ends. `fold_state.months_through` records how far that has got: the month rows
 * hold exactly the folded events of the days before it, and reports read the month it falls in
 * as its rows plus the day rows from it on.
 *
 * A database's month rows hold every folded event, so `months_through` starts after the last
 * day with a folded event (the `all` grain has a day row for each such day), and no earlier than
 * `coarse_through`: reports read exactly what they read before. From there, events of later days
 * fold into day rows only until their day ends. An empty database starts at day 0. There is no
 * way down: the code before it would read month rows without today's events.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`ALTER TABLE fold_state ADD COLUMN months_through bigint NOT NULL DEFAULT 0`.execute(db);
  await sql`
    UPDATE fold_state SET months_through = (
      SELECT COALESCE(MAX(day) + 1, 0) FROM report_rollups WHERE grain = 'all'
    )`.execute(db);
  await sql`
    UPDATE fold_state SET months_through = coarse_through WHERE months_through < coarse_through`.execute(db);
}
