import { findBuiltin } from '../catalogue/builtins.js';
import type { OrgCtx } from '../context.js';
import { AppError } from '../errors.js';

export type BaselineSource = 'request' | 'override' | 'custom' | 'builtin' | 'fallback';

export interface ResolvedBaseline {
  minutes: number;
  source: BaselineSource;
  hourlyRateMicros: number;
}

/**
 * DESIGN §4: the first layer that answers wins — request, override, custom, built-in,
 * fallback. The hourly rate follows the task type: the custom type's own rate, then the
 * organisation's rate for the category, then its default rate.
 */
export async function resolveBaseline({
  ctx,
  taskType,
  requestMinutes,
}: {
  ctx: OrgCtx;
  taskType: string;
  requestMinutes: number | null;
}): Promise<ResolvedBaseline> {
  const { org } = ctx;
  const builtin = findBuiltin(taskType);
  const override = builtin
    ? await ctx.db
        .selectFrom('task_type_overrides')
        .select('baseline_minutes_override')
        .where('org_id', '=', org.id)
        .where('task_key', '=', taskType)
        .executeTakeFirst()
    : undefined;
  const custom = builtin
    ? undefined
    : await ctx.db
        .selectFrom('custom_task_types')
        .select(['default_baseline_minutes', 'category', 'hourly_rate_micros', 'status'])
        .where('org_id', '=', org.id)
        .where('key', '=', taskType)
        .executeTakeFirst();

  const category = builtin?.category ?? custom?.category;
  const categoryRate = category === undefined ? undefined : org.categoryHourlyRatesMicros[category];
  const customRate = custom?.hourly_rate_micros ?? undefined;
  const hourlyRateMicros = customRate ?? categoryRate ?? org.defaultHourlyRateMicros;

  if (requestMinutes !== null) return { minutes: requestMinutes, source: 'request', hourlyRateMicros };
  if (override) return { minutes: override.baseline_minutes_override, source: 'override', hourlyRateMicros };
  if (custom && custom.status === 'active') {
    return { minutes: custom.default_baseline_minutes, source: 'custom', hourlyRateMicros };
  }
  if (builtin) return { minutes: builtin.default_baseline_minutes, source: 'builtin', hourlyRateMicros };
  if (org.fallbackBaselineMinutes !== null) {
    return {
      minutes: org.fallbackBaselineMinutes,
      source: 'fallback',
      hourlyRateMicros: org.defaultHourlyRateMicros,
    };
  }
  const archived = custom?.status === 'archived';
  throw new AppError(
    'unknown_task_type',
    archived
      ? `Task type "${taskType}" is archived; send human_baseline_minutes or use an active type.`
      : `Task type "${taskType}" is not in the catalogue; create it or send human_baseline_minutes.`,
    [{ path: '/body/task_type', message: archived ? 'is archived' : 'is not in the catalogue' }],
  );
}
