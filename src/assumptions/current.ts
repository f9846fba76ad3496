import type { OrgCtx } from '../context.js';
import { MICROS } from '../money.js';
import type { AssumptionHistory } from './history.js';
import type { AssumptionKind } from './kinds.js';
import { columnValue, organizationAt } from './changes.js';
import { valueAt } from './resolve.js';

/**
 * Writes the value in force at `now` of (`kind`, `key`) into today's columns and tables (the
 * organisation's settings, its overrides, its custom types), after a version was recorded with a
 * date in the past. Call it in the transaction of the change.
 */
export async function syncCurrentValue(
  ctx: OrgCtx,
  history: AssumptionHistory,
  kind: AssumptionKind,
  key: string,
  now: number,
): Promise<void> {
  const { value, id } = valueAt(history, kind, key, now, columnValue(ctx.org, kind, key));
  // The organisation's other values as in force now, for the JSON columns written whole.
  const org = organizationAt(ctx.org, history, now);
  const orgs = ctx.db.updateTable('organizations').where('id', '=', ctx.org.id);
  switch (kind) {
    case 'default_hourly_rate':
      if (value !== null) await orgs.set({ default_hourly_rate_micros: value }).execute();
      return;
    case 'fallback_baseline':
      await orgs.set({ fallback_baseline_minutes: value }).execute();
      return;
    case 'category_hourly_rate': {
      const rates: Record<string, number> = {};
      for (const [c, micros] of Object.entries(org.categoryHourlyRatesMicros)) rates[c] = micros / MICROS;
      if (value === null) delete rates[key];
      else rates[key] = value / MICROS;
      await orgs.set({ category_hourly_rates: JSON.stringify(rates) }).execute();
      return;
    }
    case 'outcome_credit': {
      if (value === null) return;
      const credits: Record<string, number> = {};
      for (const [o, micros] of Object.entries(org.outcomeCreditMicros)) credits[o] = micros / MICROS;
      credits[key] = value / MICROS;
      await orgs.set({ outcome_credit: JSON.stringify(credits) }).execute();
      return;
    }
    case 'baseline_override': {
      if (value === null) {
        await ctx.db
          .deleteFrom('task_type_overrides')
          .where('org_id', '=', ctx.org.id)
          .where('task_key', '=', key)
          .execute();
        return;
      }
      const reason = history.of(kind, key).find((v) => v.id === id)?.reason ?? null;
      const row = {
        org_id: ctx.org.id,
        task_key: key,
        baseline_minutes_override: value,
        reason,
        updated_at: now,
      };
      await ctx.db
        .insertInto('task_type_overrides')
        .values(row)
        .onConflict((oc) =>
          oc
            .columns(['org_id', 'task_key'])
            .doUpdateSet({ baseline_minutes_override: value, reason, updated_at: now }),
        )
        .execute();
      return;
    }
    case 'custom_baseline':
    case 'custom_hourly_rate': {
      const customs = ctx.db
        .updateTable('custom_task_types')
        .where('org_id', '=', ctx.org.id)
        .where('key', '=', key);
      if (kind === 'custom_baseline') {
        if (value !== null) await customs.set({ default_baseline_minutes: value }).execute();
      } else {
        await customs.set({ hourly_rate_micros: value }).execute();
      }
      return;
    }
  }
}
