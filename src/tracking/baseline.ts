import { findBuiltin } from '../catalogue/builtins.js';
import { AppError } from '../errors.js';
import type { Organization } from '../orgs/organizations.js';
import type { DbOrTrx } from '../storage/db.js';
import { runEachRow } from '../storage/insert-rows.js';
import type { TaskTypeOverridesTable } from '../storage/schema.js';

export type BaselineSource = 'request' | 'override' | 'custom' | 'builtin' | 'fallback';

export interface ResolvedBaseline {
  minutes: number;
  source: BaselineSource;
  hourlyRateMicros: number;
}

export interface CustomTypeFacts {
  default_baseline_minutes: number;
  category: string;
  hourly_rate_micros: number | null;
  status: string;
}

type OverrideFacts = Pick<TaskTypeOverridesTable, 'task_key' | 'baseline_minutes_override'>;

/** The organisation's overrides and custom types for the task types of a batch. */
export interface CatalogueFacts {
  overrides: ReadonlyMap<string, number>;
  customs: Map<string, CustomTypeFacts>;
}

/**
 * Loads, in up to two queries, what resolving `taskTypes` for `orgId` needs. `known`: the
 * overrides already read (with the API key), which are then not read again.
 */
export async function loadCatalogueFacts(
  db: DbOrTrx,
  orgId: string,
  taskTypes: string[],
  known?: ReadonlyMap<string, number>,
): Promise<CatalogueFacts> {
  const customKeys = taskTypes.filter((t) => !findBuiltin(t));
  const overrides = new Map<string, number>();
  const customs = new Map<string, CustomTypeFacts>();
  if (known === undefined && customKeys.length < taskTypes.length) {
    // All of the organisation's overrides, not those of the batch's keys: there are at most one
    // per built-in, and a statement whose text does not change with the batch is prepared once
    // (on SQLite, run on the transaction's handle) instead of built and planned per batch.
    const rows = await runEachRow<{ org_id: string }, OverrideFacts>(
      db,
      'overrides of org',
      { org_id: 'text' },
      [{ org_id: orgId }],
      (placeholders) =>
        db
          .selectFrom('task_type_overrides')
          .select(['task_key', 'baseline_minutes_override'])
          .where('org_id', '=', placeholders.org_id),
    );
    for (const row of rows) overrides.set(row.task_key, row.baseline_minutes_override);
  }
  if (customKeys.length > 0) {
    const rows = await db
      .selectFrom('custom_task_types')
      .select(['key', 'default_baseline_minutes', 'category', 'hourly_rate_micros', 'status'])
      .where('org_id', '=', orgId)
      .where('key', 'in', customKeys)
      .execute();
    for (const { key, ...facts } of rows) customs.set(key, facts);
  }
  return { overrides: known ?? overrides, customs };
}

/**
 * DESIGN §4: the first layer that answers wins — request, override, custom, built-in,
 * fallback. The hourly rate follows the task type: the custom type's own rate, then the
 * organisation's rate for the category, then its default rate.
 */
export function resolveBaseline(
  org: Organization,
  facts: CatalogueFacts,
  taskType: string,
  requestMinutes: number | null,
  path = '/body',
): ResolvedBaseline {
  const builtin = findBuiltin(taskType);
  const override = builtin ? facts.overrides.get(taskType) : undefined;
  const custom = builtin ? undefined : facts.customs.get(taskType);

  const category = builtin?.category ?? custom?.category;
  const categoryRate = category === undefined ? undefined : org.categoryHourlyRatesMicros[category];
  const customRate = custom?.hourly_rate_micros ?? undefined;
  const hourlyRateMicros = customRate ?? categoryRate ?? org.defaultHourlyRateMicros;

  if (requestMinutes !== null) return { minutes: requestMinutes, source: 'request', hourlyRateMicros };
  if (override !== undefined) return { minutes: override, source: 'override', hourlyRateMicros };
  if (custom && custom.status === 'active') {
    return { minutes: custom.default_baseline_minutes, source: 'custom', hourlyRateMicros };
  }
  if (builtin) return { minutes: builtin.default_baseline_minutes, source: 'builtin', hourlyRateMicros };
  const archived = custom?.status === 'archived';
  // Spec §3: an archived custom key fails even when the organisation has a fallback baseline.
  if (!archived && org.fallbackBaselineMinutes !== null) {
    return {
      minutes: org.fallbackBaselineMinutes,
      source: 'fallback',
      hourlyRateMicros: org.defaultHourlyRateMicros,
    };
  }
  throw new AppError(
    'unknown_task_type',
    archived
      ? `Task type "${taskType}" is archived; send human_baseline_minutes or use an active type.`
      : `Task type "${taskType}" is not in the catalogue; create it or send human_baseline_minutes.`,
    [{ path: `${path}/task_type`, message: archived ? 'is archived' : 'is not in the catalogue' }],
  );
}
