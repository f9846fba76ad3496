import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { ServiceCtx } from '../context.js';

// Failed sign-ins per subject, in the database so that every instance sees them: after
// FREE_FAILURES failures in a row, each further attempt waits 1 s, doubling up to 15 min.

export const FREE_FAILURES = 5;
export const FIRST_DELAY_MS = 1_000;
export const MAX_DELAY_MS = 15 * 60_000;
/** A subject whose last failure is this old starts again from zero. */
export const FORGET_AFTER_MS = 24 * 60 * 60_000;

/**
 * The subjects of an attempt: the client address, and the e-mail as typed (lower-cased and
 * hashed), whether or not it has an account, so the delays tell nothing about which e-mails exist.
 */
export function subjectsOf(email: string, ip: string): string[] {
  const address = email.trim().toLowerCase();
  return [`ip:${ip}`, `email:${createHash('sha256').update(address).digest('hex')}`];
}

export function delayAfter(failures: number): number {
  if (failures < FREE_FAILURES) return 0;
  const doublings = Math.min(failures - FREE_FAILURES, 20);
  return Math.min(FIRST_DELAY_MS * 2 ** doublings, MAX_DELAY_MS);
}

/** Milliseconds until the subjects may try again; 0 when they may now. */
export async function waitBeforeAttempt(ctx: ServiceCtx, subjects: string[]): Promise<number> {
  const now = ctx.clock.now().getTime();
  const rows = await ctx.db
    .selectFrom('sign_in_throttle')
    .select(['blocked_until', 'last_failed_at'])
    .where('subject', 'in', subjects)
    .execute();
  let wait = 0;
  for (const row of rows) {
    if (now - Number(row.last_failed_at) >= FORGET_AFTER_MS) continue;
    wait = Math.max(wait, Number(row.blocked_until) - now);
  }
  return wait;
}

/** Counts a failed attempt against each subject (one atomic upsert each). */
export async function noteFailure(ctx: ServiceCtx, subjects: string[]): Promise<void> {
  const now = ctx.clock.now().getTime();
  for (const subject of subjects) {
    const row = await ctx.db
      .insertInto('sign_in_throttle')
      .values({ subject, failures: 1, last_failed_at: now, blocked_until: now + delayAfter(1) })
      .onConflict((oc) =>
        oc.column('subject').doUpdateSet({
          failures: sql<number>`CASE WHEN ${now} - sign_in_throttle.last_failed_at >= ${FORGET_AFTER_MS} THEN 1 ELSE sign_in_throttle.failures + 1 END`,
          last_failed_at: now,
        }),
      )
      .returning('failures')
      .executeTakeFirstOrThrow();
    const failures = Number(row.failures);
    await ctx.db
      .updateTable('sign_in_throttle')
      .set({ blocked_until: now + delayAfter(failures) })
      .where('subject', '=', subject)
      .execute();
  }
}

/** A successful sign-in clears the e-mail's count (the address keeps its own). */
export async function clearFailures(ctx: ServiceCtx, subjects: string[]): Promise<void> {
  await ctx.db.deleteFrom('sign_in_throttle').where('subject', 'in', subjects).execute();
}
