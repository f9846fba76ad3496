import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

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
  /** The revision of the organisation's last assumption version (migration 0065). */
  assumptions_revision: Generated<number>;
}

export interface ApiKeysTable {
  id: string;
  org_id: string;
  name: string | null;
  key_hash: string;
  created_at: number;
  revoked_at: number | null;
  /** `admin` | `ingest` (DESIGN §3). */
  scope: string;
  last_used_at: number | null;
  /** The person who created the key (migration 0080); null for keys made by the CLI or before. */
  created_by_account_id: string | null;
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
  /** The person who acted (migration 0080): from the dashboard, or the creator of the API key. */
  actor_account_id: string | null;
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
  /**
   * Where the event stands in commit order (migration 0010): the inserting transaction's id
   * (`xid8`, as text) on PostgreSQL, a number given by the tracking transaction on SQLite; null
   * for events from before it.
   */
  ingest_seq: string | number | null;
}

/** The folding stage's watermark: events with `ingest_seq >= watermark` are the tail. */
export interface FoldStateTable {
  id: number;
  watermark: string | number;
  folded_at: number;
  /** The first day whose week rows are not kept yet (rollups.ts coarseThroughAt). */
  coarse_through: number;
  /** The first day whose events the month rows do not hold (rollups.ts monthsThroughAt). */
  months_through: number;
  /** Adjustments with `ingest_seq >= adjust_watermark` are the adjustments' tail (migration 0060). */
  adjust_watermark: string | number;
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
  shard: Generated<number>;
  events: number;
}

export interface AgentsTable {
  org_id: string;
  agent_id: string;
  first_event_id: string;
  first_seen_at: number;
}

/**
 * Report aggregates; see src/reports/rollups.ts and migrations 0004 (keys), 0005 (grains and
 * coarse buckets), 0006 (sums by outcome), 0011 (numeric sums) and 0012 (no half weeks; on
 * PostgreSQL a primary key without the sums).
 */
export interface ReportRollupsTable {
  org_id: string;
  /** The grain, with '/week' or '/month' for the coarse buckets of two- and three-key grains. */
  grain: string;
  /** Epoch day of the bucket's first day. */
  day: number;
  /** The grain's keys; '' for a dimension the grain does not keep. */
  agent_id: string;
  task_type: string;
  /** 'c' + client_id, or '' for events without a client. */
  client_key: string;
  shard: Generated<number>;
  /** Sums over every outcome… */
  events: number;
  hours_saved_micros: number;
  cost_saved_micros: number;
  agent_cost_micros: number;
  /** …and over the events of each outcome. */
  success_events: number;
  success_hours_saved_micros: number;
  success_cost_saved_micros: number;
  success_agent_cost_micros: number;
  needs_review_events: number;
  needs_review_hours_saved_micros: number;
  needs_review_cost_saved_micros: number;
  needs_review_agent_cost_micros: number;
  failure_events: number;
  failure_hours_saved_micros: number;
  failure_cost_saved_micros: number;
  failure_agent_cost_micros: number;
  /** Review time and its cost (migration 0060): adjustments only, events add 0. */
  review_hours_micros: number;
  review_cost_micros: number;
  success_review_hours_micros: number;
  success_review_cost_micros: number;
  needs_review_review_hours_micros: number;
  needs_review_review_cost_micros: number;
  failure_review_hours_micros: number;
  failure_review_cost_micros: number;
}

/** A signed delta of an event's figures (migration 0060, src/ledger/). */
export interface AdjustmentsTable {
  id: string;
  org_id: string;
  event_id: string;
  /** 'review' or 'restatement', and the id of the review or restatement. */
  cause: string;
  cause_id: string;
  agent_id: string;
  task_type: string;
  outcome: string;
  client_id: string | null;
  occurred_at: number;
  hours_saved_micros: number;
  cost_saved_micros: number;
  agent_cost_micros: number;
  review_hours_micros: number;
  review_cost_micros: number;
  /** The baseline and hourly rate in force after this entry, when it changed them. */
  baseline_minutes: number | null;
  hourly_rate_micros: number | null;
  created_at: number;
  /** Commit order, as events' (xid8 on PostgreSQL, given by the writer on SQLite). */
  ingest_seq: Generated<string | number>;
}

export interface ReviewsTable {
  id: string;
  org_id: string;
  event_id: string;
  /** 1 for an event's first review, 2 for the next, … (the last is in force). */
  number: number;
  review_minutes: number;
  verdict: string;
  reviewer: string | null;
  note: string | null;
  idempotency_key: string | null;
  actor_key_id: string | null;
  /** The figures the review set. */
  hours_saved_micros: number;
  cost_saved_micros: number;
  review_hours_micros: number;
  review_cost_micros: number;
  created_at: number;
}

export interface RestatementsTable {
  id: string;
  org_id: string;
  reason: string;
  /** 'staging', 'applied' or 'abandoned'. */
  status: string;
  events_seen: number;
  events_adjusted: number;
  /** The last event id staged (the walk resumes after it). */
  cursor: string | null;
  created_at: number;
  applied_at: number | null;
  /**
   * The lowest `ingest_seq` of an adjustment written after the walk began (migration 0085); null
   * before it begins.
   */
  adjust_from: string | number | null;
}

export interface RestatementStagingTable {
  restatement_id: string;
  event_id: string;
  org_id: string;
  agent_id: string;
  task_type: string;
  outcome: string;
  client_id: string | null;
  occurred_at: number;
  hours_saved_micros: number;
  cost_saved_micros: number;
  agent_cost_micros: number;
  review_hours_micros: number;
  review_cost_micros: number;
  baseline_minutes: number | null;
  hourly_rate_micros: number | null;
  /** How many adjustments the event had when its entry was staged. */
  based_on: number;
}

export interface WebhooksTable {
  id: string;
  org_id: string;
  url: string;
  description: string | null;
  /** JSON array of subscribed event types. */
  event_types: string;
  /**
   * The signing secret, sealed (crypto/secret-box.ts; webhooks/secret-storage.ts opens it).
   * Plaintext only in rows written before encryption, whose `secret_key_id` is null until
   * start-up seals them.
   */
  secret: string;
  /** The id of the key that sealed `secret`; null: not sealed yet. */
  secret_key_id: string | null;
  status: string;
  consecutive_failures: number;
  /** When `weekly.digest` was subscribed: no digest is owed for weeks sent before it. */
  digest_since: number | null;
  created_at: number;
  updated_at: number;
  deleted_at: number | null;
}

/**
 * What a webhook was subscribed to between two positions in the event log's commit order
 * (migration 0017, webhooks/subscription-versions.ts). A position is a `pg_snapshot` (as text)
 * on PostgreSQL, the largest `ingest_seq` seen on SQLite; null: from the beginning, or open.
 */
export interface WebhookSubscriptionVersionsTable {
  id: Generated<number>;
  webhook_id: string;
  org_id: string;
  /** JSON array of subscribed event types. */
  event_types: string;
  valid_from: string | number | null;
  valid_to: string | number | null;
}

export interface WebhookMessagesTable {
  id: string;
  org_id: string;
  type: string;
  payload: string;
  created_at: number;
}

export interface WebhookDeliveriesTable {
  id: string;
  org_id: string;
  webhook_id: string;
  message_id: string;
  event_type: string;
  /** pending | succeeded | failed | canceled */
  status: string;
  /** Attempts claimed so far (the number of the attempt in flight while leased). */
  attempts: number;
  next_attempt_at: number | null;
  locked_until: number | null;
  claimed_by: string | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookAttemptsTable {
  delivery_id: string;
  attempt: number;
  webhook_id: string;
  succeeded: number;
  status_code: number | null;
  response_body: string | null;
  error: string | null;
  signature: string | null;
  duration_ms: number;
  started_at: number;
  finished_at: number;
}

export interface EmailsTable {
  id: string;
  org_id: string | null;
  to_address: string;
  subject: string;
  body: string;
  /** pending | sent | failed */
  status: string;
  attempts: number;
  next_attempt_at: number | null;
  locked_until: number | null;
  claimed_by: string | null;
  last_error: string | null;
  created_at: number;
  sent_at: number | null;
  /** Optional parts (migration 0052): an HTML alternative, attachments and headers, JSON. */
  html: string | null;
  attachments: string | null;
  headers: string | null;
}

export interface DigestRunsTable {
  webhook_id: string;
  /** Monday of the digested ISO week, YYYY-MM-DD. */
  week: string;
  message_id: string;
  created_at: number;
}

export interface DashboardSessionsTable {
  /** SHA-256 (hex) of the session cookie's token. */
  id: string;
  org_id: string;
  key_id: string;
  csrf_token: string;
  flash: string | null;
  created_at: number;
  last_seen_at: number;
}

/** A budget on agent spend (src/budgets/). */
export interface BudgetsTable {
  id: string;
  org_id: string;
  name: string;
  /** org | agent | client | task_type */
  scope: string;
  /** The agent id, client id or task type; null for the whole organisation. */
  scope_value: string | null;
  amount_micros: number;
  /** JSON array of whole percentages, ascending. */
  thresholds: string;
  created_at: number;
  updated_at: number;
}

/** One alert sent; its primary key makes it once-only (src/alerts/). */
export interface AlertsTable {
  org_id: string;
  /** The budget id, or `usage` for the plan's included events. */
  subject: string;
  /** `YYYY-MM`. */
  month: string;
  /** threshold | forecast */
  kind: string;
  /** The percentage crossed; 0 for a forecast alert. */
  threshold: number;
  /** The webhook event type. */
  type: string;
  payload: string;
  message_id: string;
  created_at: number;
}

/** A fixed cost of payback and ROI (src/payback/). */
export interface FixedCostsTable {
  id: string;
  org_id: string;
  name: string;
  /** monthly | one_off */
  kind: string;
  amount_micros: number;
  /** Monthly: the first and (optionally) last month charged, `YYYY-MM`. */
  start_month: string | null;
  end_month: string | null;
  /** One-off: the day it was spent, `YYYY-MM-DD`. */
  date: string | null;
  created_at: number;
  updated_at: number;
}

/** Per organisation; a missing row means the defaults (src/payback/planning-settings.ts). */
export interface PlanningSettingsTable {
  org_id: string;
  fte_hours_per_month_micros: number;
  /** JSON array of admin e-mails that opted in to alert e-mails. */
  alert_emails: string;
  updated_at: number;
}

/** A scheduled report e-mail (src/report-emails/). */
export interface ReportSchedulesTable {
  id: string;
  org_id: string;
  /** weekly | monthly */
  frequency: string;
  /** Signs the recipients' unsubscribe links. */
  secret: string;
  created_at: number;
  updated_at: number;
}

export interface ReportRecipientsTable {
  id: string;
  schedule_id: string;
  org_id: string;
  email: string;
  unsubscribed_at: number | null;
  created_at: number;
}

/** One report e-mail queued per recipient and period. */
export interface ReportEmailRunsTable {
  org_id: string;
  email: string;
  frequency: string;
  /** The period's key: the Monday of the week or the month, `YYYY-MM-DD` / `YYYY-MM`. */
  period: string;
  schedule_id: string;
  email_id: string;
  created_at: number;
}

/** A month an organisation closed (src/periods/): its status and the statement in force. */
export interface PeriodsTable {
  org_id: string;
  /** YYYY-MM, the calendar month in UTC. */
  month: string;
  /** `closed` | `open` (reopened). */
  status: string;
  statement_id: string;
  updated_at: number;
}

/** Every statement frozen when a month was closed; reopening stamps it, nothing else changes it. */
export interface PeriodStatementsTable {
  id: string;
  org_id: string;
  month: string;
  closed_at: number;
  closed_by: string | null;
  reason: string;
  statement: string;
  reopened_at: number | null;
  reopened_by: string | null;
  reopen_reason: string | null;
}

/** A person (src/accounts/), identified by a lower-cased e-mail. */
export interface AccountsTable {
  id: string;
  email: string;
  name: string | null;
  /** scrypt (src/accounts/passwords.ts); null: no password (single sign-on only, or not set yet). */
  password_hash: string | null;
  password_changed_at: number | null;
  disabled_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface MembershipsTable {
  org_id: string;
  account_id: string;
  /** owner | admin | analyst (src/accounts/roles.ts). */
  role: string;
  created_at: number;
  updated_at: number;
}

/** A person's dashboard session; `id` is the SHA-256 (hex) of the cookie's token. */
export interface AccountSessionsTable {
  id: string;
  account_id: string;
  /** The organisation the session is looking at (switchable among the person's memberships). */
  org_id: string;
  csrf_token: string;
  flash: string | null;
  /** How it was opened: password | sso | invitation | first_owner | reset. */
  method: string;
  user_agent: string | null;
  ip: string | null;
  created_at: number;
  last_seen_at: number;
}

/** A single-use token; `id` is the SHA-256 (hex) of the token sent. */
export interface AccountTokensTable {
  id: string;
  /** password_reset | first_owner */
  kind: string;
  account_id: string | null;
  org_id: string | null;
  email: string | null;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface InvitationsTable {
  id: string;
  org_id: string;
  email: string;
  role: string;
  /** SHA-256 (hex) of the link's token. */
  token_hash: string;
  invited_by_account_id: string | null;
  invited_by_key_id: string | null;
  sent_count: number;
  last_sent_at: number | null;
  created_at: number;
  expires_at: number;
  accepted_at: number | null;
  accepted_account_id: string | null;
  revoked_at: number | null;
}

/** Failed sign-ins per subject (`account:<id>` or `ip:<address>`), for growing delays. */
export interface SignInThrottleTable {
  subject: string;
  failures: number;
  last_failed_at: number;
  blocked_until: number;
}

/** An organisation's OpenID Connect single sign-on (Enterprise). */
export interface SsoConnectionsTable {
  org_id: string;
  issuer: string;
  client_id: string;
  /** Sealed like webhook secrets (crypto/secret-box.ts). */
  client_secret: string;
  secret_key_id: string | null;
  /** JSON array of lower-case domains. */
  allowed_domains: string;
  /** The role given to a person provisioned at first sign-in. */
  default_role: string;
  /** 1: members may still sign in with a password; 0: single sign-on only. */
  passwords_allowed: number;
  enabled: number;
  created_at: number;
  updated_at: number;
}

/** An OpenID Connect sign-in in flight: state (hashed), PKCE verifier and nonce, used once. */
export interface SsoLoginsTable {
  state_hash: string;
  org_id: string;
  code_verifier: string;
  nonce: string;
  return_to: string | null;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

/**
 * One value of an assumption from an instant on (migration 0065; src/assumptions/). `value`:
 * minutes for baselines, micro-units for rates and credits, null = unset.
 */
export interface AssumptionVersionsTable {
  id: string;
  org_id: string;
  revision: number;
  kind: string;
  key: string;
  value: number | null;
  /** Epoch ms; 0 = from the beginning. */
  effective_from: number;
  recorded_at: number;
  actor_key_id: string | null;
  reason: string | null;
  /** Set when the version was recorded by a restatement (a change with a past date). */
  restatement_id: string | null;
}

export interface Database {
  organizations: OrganizationsTable;
  api_keys: ApiKeysTable;
  dashboard_sessions: DashboardSessionsTable;
  task_type_overrides: TaskTypeOverridesTable;
  custom_task_types: CustomTaskTypesTable;
  audit_log: AuditLogTable;
  events: EventsTable;
  idempotency_keys: IdempotencyKeysTable;
  usage_monthly: UsageMonthlyTable;
  agents: AgentsTable;
  report_rollups: ReportRollupsTable;
  adjustments: AdjustmentsTable;
  reviews: ReviewsTable;
  restatements: RestatementsTable;
  restatement_staging: RestatementStagingTable;
  webhooks: WebhooksTable;
  webhook_subscription_versions: WebhookSubscriptionVersionsTable;
  webhook_messages: WebhookMessagesTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  emails: EmailsTable;
  digest_runs: DigestRunsTable;
  fold_state: FoldStateTable;
  budgets: BudgetsTable;
  alerts: AlertsTable;
  fixed_costs: FixedCostsTable;
  planning_settings: PlanningSettingsTable;
  report_schedules: ReportSchedulesTable;
  report_recipients: ReportRecipientsTable;
  report_email_runs: ReportEmailRunsTable;
  periods: PeriodsTable;
  period_statements: PeriodStatementsTable;
  accounts: AccountsTable;
  memberships: MembershipsTable;
  account_sessions: AccountSessionsTable;
  account_tokens: AccountTokensTable;
  invitations: InvitationsTable;
  sign_in_throttle: SignInThrottleTable;
  sso_connections: SsoConnectionsTable;
  sso_logins: SsoLoginsTable;
  assumption_versions: AssumptionVersionsTable;
}

export type OrganizationRow = Selectable<OrganizationsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type EventRow = Selectable<EventsTable>;
export type NewEventRow = Insertable<EventsTable>;
export type CustomTaskTypeRow = Selectable<CustomTaskTypesTable>;
export type OverrideRow = Selectable<TaskTypeOverridesTable>;
export type AuditLogRow = Selectable<AuditLogTable>;
export type AssumptionVersionRow = Selectable<AssumptionVersionsTable>;
export type OrganizationUpdate = Updateable<OrganizationsTable>;
export type WebhookRow = Selectable<WebhooksTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
export type EmailRow = Selectable<EmailsTable>;
export type BudgetRow = Selectable<BudgetsTable>;
export type FixedCostRow = Selectable<FixedCostsTable>;
export type ReportScheduleRow = Selectable<ReportSchedulesTable>;
export type PeriodStatementRow = Selectable<PeriodStatementsTable>;
export type AccountRow = Selectable<AccountsTable>;
export type MembershipRow = Selectable<MembershipsTable>;
export type InvitationRow = Selectable<InvitationsTable>;
export type SsoConnectionRow = Selectable<SsoConnectionsTable>;
export type AdjustmentRow = Selectable<AdjustmentsTable>;
export type ReviewRow = Selectable<ReviewsTable>;
export type RestatementRow = Selectable<RestatementsTable>;
