import { requireRole } from '../accounts/authorize.js';
import type { OrgCtx } from '../context.js';
import { validationError } from '../errors.js';
import { MICROS, fromMicros, toMicros } from '../money.js';
import type { DbOrTrx } from '../storage/db.js';

/** Working hours of one full-time employee in a month, unless the organisation sets its own. */
export const DEFAULT_FTE_HOURS_PER_MONTH = 160;
/** The hours of a 31-day month: no FTE works more. */
const MAX_FTE_HOURS = 744;

/**
 * Settings of budgets, alerts and payback, kept beside the organisation's own (a row of their
 * own; no row means the defaults) and shown with them in /v1/settings.
 */
export interface PlanningSettings {
  fteHoursPerMonthMicros: number;
  /** Admin e-mails that opted in to budget and usage alert e-mails. */
  alertEmails: string[];
}

export interface PlanningSettingsPatch {
  fte_hours_per_month?: number;
  alert_emails?: string[];
}

export async function getPlanningSettings(db: DbOrTrx, orgId: string): Promise<PlanningSettings> {
  const row = await db
    .selectFrom('planning_settings')
    .select(['fte_hours_per_month_micros', 'alert_emails'])
    .where('org_id', '=', orgId)
    .executeTakeFirst();
  return {
    fteHoursPerMonthMicros: row
      ? Number(row.fte_hours_per_month_micros)
      : DEFAULT_FTE_HOURS_PER_MONTH * MICROS,
    alertEmails: row ? (JSON.parse(row.alert_emails) as string[]) : [],
  };
}

export function planningSettingsView(s: PlanningSettings) {
  return { fte_hours_per_month: fromMicros(s.fteHoursPerMonthMicros), alert_emails: s.alertEmails };
}

/** The admins who get alert e-mails: those who opted in and are still admins. */
export function alertRecipients(s: PlanningSettings, adminEmails: readonly string[]): string[] {
  const admins = new Set(adminEmails.map((e) => e.toLowerCase()));
  return s.alertEmails.filter((e) => admins.has(e.toLowerCase()));
}

/**
 * Applies a patch. Alert e-mails go only to the organisation's admins (`admin_emails`), so each
 * one opting in must be one of them (checked against the admins after the same PATCH).
 */
export async function updatePlanningSettings({
  ctx,
  patch,
}: {
  ctx: OrgCtx;
  patch: PlanningSettingsPatch;
}): Promise<PlanningSettings> {
  requireRole(ctx, 'admin');
  const current = await getPlanningSettings(ctx.db, ctx.org.id);
  const next = { ...current };
  if (patch.fte_hours_per_month !== undefined) {
    const hours = patch.fte_hours_per_month;
    if (!Number.isFinite(hours) || hours <= 0 || hours > MAX_FTE_HOURS) {
      throw validationError('/body/fte_hours_per_month', `must be above 0 and at most ${MAX_FTE_HOURS}`);
    }
    next.fteHoursPerMonthMicros = toMicros(hours);
  }
  if (patch.alert_emails !== undefined) {
    const admins = new Set(ctx.org.adminEmails.map((e) => e.toLowerCase()));
    const outsider = patch.alert_emails.findIndex((e) => !admins.has(e.toLowerCase()));
    if (outsider >= 0) {
      throw validationError(`/body/alert_emails/${outsider}`, 'must be one of the admin_emails');
    }
    next.alertEmails = [...new Set(patch.alert_emails)];
  }
  if (patch.fte_hours_per_month === undefined && patch.alert_emails === undefined) return current;
  const values = {
    org_id: ctx.org.id,
    fte_hours_per_month_micros: next.fteHoursPerMonthMicros,
    alert_emails: JSON.stringify(next.alertEmails),
    updated_at: ctx.clock.now().getTime(),
  };
  await ctx.db
    .insertInto('planning_settings')
    .values(values)
    .onConflict((oc) => oc.column('org_id').doUpdateSet(values))
    .execute();
  return next;
}
