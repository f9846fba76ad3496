import { sql, type Kysely } from 'kysely';

/**
 * The folding stage folds in parts (DESIGN §11, rollups.ts FOLD_PARTS), each behind its own row
 * of `fold_state`: row 1 keeps the first part (and usage and the webhook messages), row 2 is the
 * second part's. Every event below row 1's watermark is folded into every grain, and the weeks
 * and days it closed are closed in every grain, so row 2 starts as a copy of row 1: reports read
 * exactly what they read before.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    INSERT INTO fold_state (id, watermark, folded_at, coarse_through, months_through)
    SELECT 2, watermark, folded_at, coarse_through, months_through FROM fold_state WHERE id = 1`.execute(db);
}
