import { requireRole } from '../accounts/authorize.js';
import { randomBytes } from 'node:crypto';
import type { OrgCtx } from '../context.js';
import { notFound, validationError } from '../errors.js';
import { newId } from '../ids.js';
import { pageOf } from '../storage/pagination.js';
import type { DbOrTrx } from '../storage/db.js';
import type { ReportScheduleRow } from '../storage/schema.js';
import { FREQUENCIES, nextSendAt, type Frequency } from './periods.js';

export const MAX_RECIPIENTS = 50;
export const MAX_SCHEDULES = 20;
const EMAIL = /^[^\s@<>(),;:"\\[\]]+@[^\s@<>(),;:"\\[\]]+\.[^\s@<>(),;:"\\[\]]+$/;

export interface ScheduleInput {
  frequency: Frequency;
  recipients: string[];
}

export interface Recipient {
  id: string;
  email: string;
  unsubscribedAt: number | null;
}

export interface Schedule {
  id: string;
  orgId: string;
  frequency: Frequency;
  secret: string;
  recipients: Recipient[];
  createdAt: number;
  updatedAt: number;
}

function checkFrequency(value: string): Frequency {
  if (!(FREQUENCIES as readonly string[]).includes(value)) {
    throw validationError('/body/frequency', 'must be weekly or monthly');
  }
  return value as Frequency;
}

/** Trimmed, each an address once (case-insensitively), 1 to MAX_RECIPIENTS of them. */
function checkRecipients(list: readonly string[]): string[] {
  if (list.length === 0 || list.length > MAX_RECIPIENTS) {
    throw validationError('/body/recipients', `must hold 1 to ${MAX_RECIPIENTS} e-mail addresses`);
  }
  const seen = new Set<string>();
  const out: string[] = [];
  list.forEach((raw, i) => {
    const email = raw.trim();
    if (!EMAIL.test(email) || email.length > 254) {
      throw validationError(`/body/recipients/${i}`, 'must be an e-mail address');
    }
    if (seen.has(email.toLowerCase())) return;
    seen.add(email.toLowerCase());
    out.push(email);
  });
  return out;
}

async function recipientsOf(db: DbOrTrx, scheduleIds: string[]): Promise<Map<string, Recipient[]>> {
  const byId = new Map<string, Recipient[]>(scheduleIds.map((id) => [id, []]));
  if (scheduleIds.length === 0) return byId;
  const rows = await db
    .selectFrom('report_recipients')
    .select(['id', 'schedule_id', 'email', 'unsubscribed_at'])
    .where('schedule_id', 'in', scheduleIds)
    .orderBy('email')
    .execute();
  for (const r of rows) {
    byId.get(r.schedule_id)?.push({
      id: r.id,
      email: r.email,
      unsubscribedAt: r.unsubscribed_at === null ? null : Number(r.unsubscribed_at),
    });
  }
  return byId;
}

async function withRecipients(db: DbOrTrx, rows: ReportScheduleRow[]): Promise<Schedule[]> {
  const recipients = await recipientsOf(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((row) => ({
    id: row.id,
    orgId: row.org_id,
    frequency: row.frequency === 'monthly' ? 'monthly' : 'weekly',
    secret: row.secret,
    recipients: recipients.get(row.id) ?? [],
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  }));
}

export function scheduleView(s: Schedule, now: Date) {
  return {
    id: s.id,
    frequency: s.frequency,
    recipients: s.recipients.map((r) => ({
      email: r.email,
      unsubscribed_at: r.unsubscribedAt === null ? null : new Date(r.unsubscribedAt).toISOString(),
    })),
    next_send_at: new Date(nextSendAt(s.frequency, now)).toISOString(),
    created_at: new Date(s.createdAt).toISOString(),
    updated_at: new Date(s.updatedAt).toISOString(),
  };
}

/** Adds the addresses of `emails` the schedule lacks and removes those it no longer lists. */
async function setRecipients(ctx: OrgCtx, db: DbOrTrx, scheduleId: string, emails: string[], at: number) {
  const current = (await recipientsOf(db, [scheduleId])).get(scheduleId) ?? [];
  const wanted = new Set(emails.map((e) => e.toLowerCase()));
  const kept = new Set(current.map((r) => r.email.toLowerCase()));
  const removed = current.filter((r) => !wanted.has(r.email.toLowerCase())).map((r) => r.id);
  if (removed.length > 0) await db.deleteFrom('report_recipients').where('id', 'in', removed).execute();
  const added = emails.filter((e) => !kept.has(e.toLowerCase()));
  if (added.length > 0) {
    await db
      .insertInto('report_recipients')
      .values(
        added.map((email) => ({
          id: newId('rcpt', new Date(at)),
          schedule_id: scheduleId,
          org_id: ctx.org.id,
          email,
          unsubscribed_at: null,
          created_at: at,
        })),
      )
      .execute();
  }
}

export async function createSchedule({
  ctx,
  input,
}: {
  ctx: OrgCtx;
  input: ScheduleInput;
}): Promise<Schedule> {
  requireRole(ctx, 'admin');
  const frequency = checkFrequency(input.frequency);
  const emails = checkRecipients(input.recipients);
  const at = ctx.clock.now().getTime();
  const id = newId('rsch', new Date(at));
  return ctx.db.transaction().execute(async (trx) => {
    const count = await trx
      .selectFrom('report_schedules')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('org_id', '=', ctx.org.id)
      .executeTakeFirstOrThrow();
    if (Number(count.n) >= MAX_SCHEDULES) {
      throw validationError('/body', `an organisation keeps at most ${MAX_SCHEDULES} report schedules`);
    }
    await trx
      .insertInto('report_schedules')
      .values({
        id,
        org_id: ctx.org.id,
        frequency,
        // Signs the unsubscribe links of this schedule's e-mails (unsubscribe.ts).
        secret: randomBytes(32).toString('base64url'),
        created_at: at,
        updated_at: at,
      })
      .execute();
    await setRecipients(ctx, trx, id, emails, at);
    return getSchedule({ ctx: { ...ctx, db: trx }, id });
  });
}

export async function getSchedule({ ctx, id }: { ctx: OrgCtx; id: string }): Promise<Schedule> {
  const row = await ctx.db
    .selectFrom('report_schedules')
    .selectAll()
    .where('org_id', '=', ctx.org.id)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) throw notFound(`Report schedule ${id}`);
  const [schedule] = await withRecipients(ctx.db, [row]);
  if (!schedule) throw notFound(`Report schedule ${id}`);
  return schedule;
}

/** Newest first; the cursor is the id of the last schedule of the previous page. */
export async function listSchedules({ ctx, limit, cursor }: { ctx: OrgCtx; limit: number; cursor?: string }) {
  let query = ctx.db.selectFrom('report_schedules').selectAll().where('org_id', '=', ctx.org.id);
  if (cursor !== undefined) query = query.where('id', '<', cursor);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const { page, next_cursor } = pageOf(rows, limit);
  return { data: await withRecipients(ctx.db, page), next_cursor };
}

/**
 * Changes the frequency or the recipients. An address that stays keeps its state (one who
 * unsubscribed stays unsubscribed); one removed and added again later is a new recipient.
 */
export async function updateSchedule({
  ctx,
  id,
  patch,
}: {
  ctx: OrgCtx;
  id: string;
  patch: Partial<ScheduleInput>;
}): Promise<Schedule> {
  requireRole(ctx, 'admin');
  const frequency = patch.frequency === undefined ? undefined : checkFrequency(patch.frequency);
  const emails = patch.recipients === undefined ? undefined : checkRecipients(patch.recipients);
  const at = ctx.clock.now().getTime();
  return ctx.db.transaction().execute(async (trx) => {
    const tx = { ...ctx, db: trx };
    await getSchedule({ ctx: tx, id });
    await trx
      .updateTable('report_schedules')
      .set({ updated_at: at, ...(frequency === undefined ? {} : { frequency }) })
      .where('id', '=', id)
      .where('org_id', '=', ctx.org.id)
      .execute();
    if (emails !== undefined) await setRecipients(ctx, trx, id, emails, at);
    return getSchedule({ ctx: tx, id });
  });
}

export async function deleteSchedule({ ctx, id }: { ctx: OrgCtx; id: string }): Promise<void> {
  requireRole(ctx, 'admin');
  await ctx.db.transaction().execute(async (trx) => {
    await getSchedule({ ctx: { ...ctx, db: trx }, id });
    await trx.deleteFrom('report_recipients').where('schedule_id', '=', id).execute();
    await trx.deleteFrom('report_schedules').where('id', '=', id).where('org_id', '=', ctx.org.id).execute();
  });
}

/** Every schedule of every organisation (the scheduler). */
export async function allSchedules(db: DbOrTrx): Promise<Schedule[]> {
  const rows = await db.selectFrom('report_schedules').selectAll().orderBy('id').execute();
  return withRecipients(db, rows);
}
