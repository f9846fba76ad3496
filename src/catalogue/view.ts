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

export function builtinRecord(builtin: BuiltinTaskType, override: OverrideRow | undefined): TaskTypeRecord {
  return {
    key: builtin.key,
    display_name: builtin.display_name,
    category: builtin.category,
    kind: 'builtin',
    status: 'active',
    default_baseline_minutes: builtin.default_baseline_minutes,
    effective_baseline_minutes: override?.baseline_minutes_override ?? builtin.default_baseline_minutes,
    baseline_source: BUILTIN_BASELINE_SOURCE,
    // Built-ins price at the organisation's category or default rate, never a rate of their own.
    hourly_rate: null,
    override: override ? overrideView(override, builtin) : null,
    created_at: null,
  };
}

export function customRecord(row: CustomTaskTypeRow): TaskTypeRecord {
  return {
    key: row.key,
    display_name: row.display_name,
    category: row.category,
    kind: 'custom',
    status: row.status === 'archived' ? 'archived' : 'active',
    default_baseline_minutes: row.default_baseline_minutes,
    // Overrides exist only for built-ins; a custom type is changed at its source.
    effective_baseline_minutes: row.default_baseline_minutes,
    baseline_source: row.baseline_source,
    hourly_rate: row.hourly_rate_micros === null ? null : fromMicros(Number(row.hourly_rate_micros)),
    override: null,
    created_at: iso(row.created_at),
  };
}
