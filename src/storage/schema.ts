import type { Insertable, Selectable, Updateable } from 'kysely';

/**
 * Table types shared by both engines. Times are epoch milliseconds (bigint), hours and money
 * integer micro-units, JSON documents text.
 */
export interface OrganizationsTable {
  id: string;
  name: string;
  plan: string;
  currency: string;
  default_hourly_rate_micros: number;
  category_hourly_rates: string;
  outcome_credit: string;
  fallback_baseline_minutes: number | null;
  usd_exchange_rate: number | null;
  admin_emails: string;
  created_at: number;
}

export interface ApiKeysTable {
  id: string;
  org_id: string;
  name: string | null;
  key_hash: string;
  created_at: number;
  revoked_at: number | null;
}

export interface TaskTypeOverridesTable {
  org_id: string;
  task_key: string;
  baseline_minutes_override: number;
  reason: string | null;
  updated_at: number;
}

export interface CustomTaskTypesTable {
  org_id: string;
  key: string;
  display_name: string;
  category: string;
  default_baseline_minutes: number;
  baseline_source: string | null;
  hourly_rate_micros: number | null;
  status: string;
  created_at: number;
  archived_at: number | null;
}

export interface AuditLogTable {
  id: string;
  org_id: string;
  at: number;
  actor_key_id: string | null;
  action: string;
  target: string;
  before: string | null;
  after: string | null;
  reason: string | null;
}

export interface EventsTable {
  id: string;
  org_id: string;
  agent_id: string;
  task_type: string;
  outcome: string;
  client_id: string | null;
  resolved_baseline_minutes: number;
  resolved_baseline_source: string;
  resolved_hourly_rate_micros: number;
  currency: string;
  agent_duration_seconds: number | null;
  hours_saved_micros: number;
  cost_saved_micros: number;
  agent_cost_micros: number | null;
  resolved_cost_source: string;
  model: string | null;
  tokens_in: number | null;
  tokens_out: number | null;
  metadata: string | null;
  audit_sample: string | null;
  pricing: string | null;
  occurred_at: number;
  received_at: number;
  idempotency_key: string | null;
}

export interface IdempotencyKeysTable {
  org_id: string;
  key: string;
  event_id: string;
  created_at: number;
}

export interface UsageMonthlyTable {
  org_id: string;
  month: string;
  events: number;
}

export interface AgentsTable {
  org_id: string;
  agent_id: string;
  first_event_id: string;
  first_seen_at: number;
}

/** Daily report aggregates; see migration 2026_11_22_0002_reports for the grains and keys. */
export interface ReportRollupsTable {
  org_id: string;
  grain: string;
  day: number;
  key: string;
  outcome: string;
  events: number;
  hours_saved_micros: number;
  cost_saved_micros: number;
  agent_cost_micros: number;
}

export interface Database {
  organizations: OrganizationsTable;
  api_keys: ApiKeysTable;
  task_type_overrides: TaskTypeOverridesTable;
  custom_task_types: CustomTaskTypesTable;
  audit_log: AuditLogTable;
  events: EventsTable;
  idempotency_keys: IdempotencyKeysTable;
  usage_monthly: UsageMonthlyTable;
  agents: AgentsTable;
  report_rollups: ReportRollupsTable;
}

export type OrganizationRow = Selectable<OrganizationsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type EventRow = Selectable<EventsTable>;
export type NewEventRow = Insertable<EventsTable>;
export type CustomTaskTypeRow = Selectable<CustomTaskTypesTable>;
export type OverrideRow = Selectable<TaskTypeOverridesTable>;
export type AuditLogRow = Selectable<AuditLogTable>;
export type OrganizationUpdate = Updateable<OrganizationsTable>;
