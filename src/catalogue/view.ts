import type { AssumptionHistory } from '../assumptions/history.js';
import { builtinBaselineAt, customBaselineAt, valueAt } from '../assumptions/resolve.js';
import { historyView, type AssumptionVersionView } from '../assumptions/view.js';
import { fromMicros } from '../money.js';
import type { CustomTaskTypeRow, OverrideRow } from '../storage/schema.js';
import { BUILTIN_BASELINE_SOURCE, type BuiltinTaskType } from './builtins.js';

export interface OverrideView {
  baseline_minutes_override: number;
  original_baseline_minutes: number;
  reason: string | null;
  updated_at: string;
}

/** A task type as the API shows it (DESIGN §5); built-ins and customs share one shape. */
export interface TaskTypeRecord {
  key: string;
  display_name: string;
  category: string;
  kind: 'builtin' | 'custom';
  status: 'active' | 'archived';
  default_baseline_minutes: number;
  effective_baseline_minutes: number;
  baseline_source: string | null;
  hourly_rate: number | null;
  override: OverrideView | null;
  created_at: string | null;
  /** The versions of its baseline (and a custom type's rate), with their dates. */
  assumption_history: AssumptionVersionView[];
}

/** The organisation's history and the instant the record shows; without it, the stored rows alone. */
export interface AtTime {
  history: AssumptionHistory;
  now: number;
}

const iso = (millis: number) => new Date(Number(millis)).toISOString();

/** The override next to the built-in value it replaces, so both stay visible. */
export function overrideView(row: OverrideRow, builtin: BuiltinTaskType): OverrideView {
  return {
    baseline_minutes_override: row.baseline_minutes_override,
    original_baseline_minutes: builtin.default_baseline_minutes,
    reason: row.reason,
    updated_at: iso(row.updated_at),
  };
}

export function builtinRecord(
  builtin: BuiltinTaskType,
  override: OverrideRow | undefined,
  at?: AtTime,
): TaskTypeRecord {
  let shown = override ? overrideView(override, builtin) : null;
  if (at) {
    // The override in force now, which a change scheduled earlier may have made so since.
    const inForce = builtinBaselineAt(at.history, builtin.key, builtin.default_baseline_minutes, at.now);
    const version =
      inForce.id === null
        ? undefined
        : at.history.of('baseline_override', builtin.key).find((v) => v.id === inForce.id);
    shown =
      inForce.source === 'builtin'
        ? null
        : {
            baseline_minutes_override: inForce.minutes,
            original_baseline_minutes: builtin.default_baseline_minutes,
            reason: version?.reason ?? override?.reason ?? null,
            updated_at: iso(Math.max(version?.recordedAt ?? 0, Number(override?.updated_at ?? 0))),
          };
  }
  return {
    key: builtin.key,
    display_name: builtin.display_name,
    category: builtin.category,
    kind: 'builtin',
    status: 'active',
    default_baseline_minutes: builtin.default_baseline_minutes,
    effective_baseline_minutes: shown?.baseline_minutes_override ?? builtin.default_baseline_minutes,
    baseline_source: BUILTIN_BASELINE_SOURCE,
    // Built-ins price at the organisation's category or default rate, never a rate of their own.
    hourly_rate: null,
    override: shown,
    created_at: null,
    assumption_history: at ? historyView(at.history, [['baseline_override', builtin.key]], at.now) : [],
  };
}

export function customRecord(row: CustomTaskTypeRow, at?: AtTime): TaskTypeRecord {
  const facts = {
    ...row,
    hourly_rate_micros: row.hourly_rate_micros === null ? null : Number(row.hourly_rate_micros),
  };
  const minutes = at
    ? customBaselineAt(at.history, row.key, facts, at.now).minutes
    : row.default_baseline_minutes;
  const rate = at
    ? valueAt(at.history, 'custom_hourly_rate', row.key, at.now, facts.hourly_rate_micros).value
    : facts.hourly_rate_micros;
  return {
    key: row.key,
    display_name: row.display_name,
    category: row.category,
    kind: 'custom',
    status: row.status === 'archived' ? 'archived' : 'active',
    default_baseline_minutes: minutes,
    // Overrides exist only for built-ins; a custom type is changed at its source.
    effective_baseline_minutes: minutes,
    baseline_source: row.baseline_source,
    hourly_rate: rate === null ? null : fromMicros(rate),
    override: null,
    created_at: iso(row.created_at),
    assumption_history: at
      ? historyView(
          at.history,
          [
            ['custom_baseline', row.key],
            ['custom_hourly_rate', row.key],
          ],
          at.now,
        )
      : [],
  };
}
