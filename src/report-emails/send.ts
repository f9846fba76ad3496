import { requireRole } from '../accounts/authorize.js';
import type { OrgCtx, ServiceCtx } from '../context.js';
import { queueEmails } from '../email/outbox.js';
import { getOrganization } from '../orgs/organizations.js';
import { composeReportEmail, type ReportEmail } from './compose.js';
import { latestDuePeriod, type ReportPeriod } from './periods.js';
import { allSchedules, getSchedule, type Schedule } from './schedules.js';
import { unsubscribeUrl } from './unsubscribe.js';

/**
 * Queues `period`'s e-mail to each subscribed recipient of `schedule` who has not had it: one
 * per recipient and period across the organisation's schedules and processes. The
 * `report_email_runs` row is inserted in the transaction that queues the e-mail, and its key
 * (organisation, address, frequency, period) is unique, so a second scheduler racing on one
 * database queues nothing. The e-mail is composed once, when some recipient needs it.
 */
async function queueSchedule(ctx: OrgCtx, schedule: Schedule, period: ReportPeriod): Promise<string[]> {
  const recipients = schedule.recipients.filter((r) => r.unsubscribedAt === null);
  if (recipients.length === 0) return [];
  const done = await ctx.db
    .selectFrom('report_email_runs')
    .select('email')
    .where('org_id', '=', ctx.org.id)
    .where('frequency', '=', period.frequency)
    .where('period', '=', period.key)
    .execute();
  const sent = new Set(done.map((d) => d.email.toLowerCase()));
  const due = recipients.filter((r) => !sent.has(r.email.toLowerCase()));
  if (due.length === 0) return [];
  let email: ReportEmail | null = null;
  const queued: string[] = [];
  for (const recipient of due) {
    email ??= await composeReportEmail({ ctx, period });
    const link = unsubscribeUrl(ctx.config.publicUrl, schedule.secret, recipient.id);
    const { text, html } = email.render(link);
    const mail = email;
    const claimed = await ctx.db.transaction().execute(async (trx) => {
      const at = ctx.clock.now();
      const claim = await trx
        .insertInto('report_email_runs')
        .values({
          org_id: ctx.org.id,
          email: recipient.email.toLowerCase(),
          frequency: period.frequency,
          period: period.key,
          schedule_id: schedule.id,
          email_id: '',
          created_at: at.getTime(),
        })
        .onConflict((oc) => oc.columns(['org_id', 'email', 'frequency', 'period']).doNothing())
        .executeTakeFirst();
      if (Number(claim.numInsertedOrUpdatedRows ?? 0) === 0) return false;
      await queueEmails({
        db: trx,
        at,
        emails: [
          {
            orgId: ctx.org.id,
            to: recipient.email,
            subject: mail.subject,
            body: text,
            html,
            attachments: [mail.attachment],
            headers: {
              'List-Unsubscribe': `<${link}>`,
              'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
            },
          },
        ],
      });
      return true;
    });
    if (claimed) queued.push(recipient.email);
  }
  return queued;
}

/**
 * The scheduler's pass: for every schedule, the latest period due (last week from Monday 09:00
 * UTC, last month from the 1st at 09:00 UTC), unless the schedule was created after it was due.
 * A period missed while no worker ran goes out when one runs again, until the next is due.
 */
export async function queueDueReportEmails({ ctx }: { ctx: ServiceCtx }): Promise<string[]> {
  const now = ctx.clock.now();
  const queued: string[] = [];
  for (const schedule of await allSchedules(ctx.db)) {
    const period = latestDuePeriod(schedule.frequency, now);
    if (schedule.createdAt > period.sendAt) continue;
    const org = await getOrganization({ ctx, id: schedule.orgId });
    queued.push(...(await queueSchedule({ ...ctx, org, actorKeyId: null }, schedule, period)));
  }
  return queued;
}

/** Sends the latest due period now to the schedule's recipients who have not had it. */
export async function sendScheduleNow({ ctx, id }: { ctx: OrgCtx; id: string }) {
  requireRole(ctx, 'admin');
  const schedule = await getSchedule({ ctx, id });
  const period = latestDuePeriod(schedule.frequency, ctx.clock.now());
  const queued = await queueSchedule(ctx, schedule, period);
  return { period: period.key, queued };
}
