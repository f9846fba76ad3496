import type { components, operations } from './openapi.js';

type Schemas = components['schemas'];
type Query<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>;

export type Event = Schemas['Event'];
export type TrackRequest = Schemas['TrackRequest'];
export type TrackBatchItem = Schemas['TrackBatchItem'];
export type TrackBatchResult = Schemas['TrackBatchResult'];
export type TrackBatchResponse = Schemas['TrackBatchResponse'];
export type EventList = Schemas['EventList'];
export type Outcome = Schemas['Outcome'];
export type TaskType = Schemas['TaskType'];
export type TaskTypeList = Schemas['TaskTypeList'];
export type CreateTaskTypeRequest = Schemas['CreateTaskTypeRequest'];
export type OverrideRequest = Schemas['OverrideRequest'];
export type Category = Schemas['Category'];
export type Report = Schemas['Report'];
export type ReportRow = Schemas['ReportRow'];
export type Leaderboard = Schemas['Leaderboard'];
export type LeaderboardRow = Schemas['LeaderboardRow'];
export type Usage = Schemas['Usage'];
export type Settings = Schemas['Settings'];
export type SettingsPatch = Schemas['SettingsPatch'];
export type AuditEntry = Schemas['AuditEntry'];
export type AuditLogPage = Schemas['AuditLogPage'];
export type Webhook = Schemas['Webhook'];
export type WebhookWithSecret = Schemas['WebhookWithSecret'];
export type WebhookList = Schemas['WebhookList'];
export type CreateWebhookRequest = Schemas['CreateWebhookRequest'];
export type UpdateWebhookRequest = Schemas['UpdateWebhookRequest'];
export type Delivery = Schemas['Delivery'];
export type DeliveryList = Schemas['DeliveryList'];
export type OtlpMappingRule = Schemas['OtlpMappingRule'];
export type OtlpMappingRuleRequest = Schemas['OtlpMappingRuleRequest'];
export type OtlpMappingRuleCreated = Schemas['OtlpMappingRuleCreated'];
export type OtlpMappingRuleList = Schemas['OtlpMappingRuleList'];
export type OtlpUnresolvedRun = Schemas['OtlpUnresolvedRun'];
export type OtlpUnresolvedRunList = Schemas['OtlpUnresolvedRunList'];
export type Forecast = Schemas['Forecast'];
export type Payback = Schemas['Payback'];
export type Budget = Schemas['Budget'];
export type BudgetList = Schemas['BudgetList'];
export type BudgetStatus = Schemas['BudgetStatus'];
export type CreateBudgetRequest = Schemas['CreateBudgetRequest'];
export type UpdateBudgetRequest = Schemas['UpdateBudgetRequest'];
export type FixedCost = Schemas['FixedCost'];
export type FixedCostList = Schemas['FixedCostList'];
export type CreateFixedCostRequest = Schemas['CreateFixedCostRequest'];
export type UpdateFixedCostRequest = Schemas['UpdateFixedCostRequest'];
export type SsoConnection = Schemas['SsoConnection'];
export type SsoConnectionInput = Schemas['SsoConnectionInput'];
export type ReportSchedule = Schemas['ReportSchedule'];
export type ReportScheduleList = Schemas['ReportScheduleList'];
export type CreateReportScheduleRequest = Schemas['CreateReportScheduleRequest'];
export type UpdateReportScheduleRequest = Schemas['UpdateReportScheduleRequest'];
export type ReportSendResult = Schemas['ReportSendResult'];
export type Period = Schemas['Period'];
export type PeriodList = Schemas['PeriodList'];
export type PeriodStatement = Schemas['PeriodStatement'];
export type PeriodStatementList = Schemas['PeriodStatementList'];
export type PeriodChanges = Schemas['PeriodChanges'];
export type ClosedPeriodNote = Schemas['ClosedPeriodNote'];
export type Role = Schemas['Role'];
export type Invitation = Schemas['Invitation'];
export type InvitationList = Schemas['InvitationList'];
export type InvitationStatus = Schemas['InvitationStatus'];
export type CreateInvitationRequest = Schemas['CreateInvitationRequest'];
export type Member = Schemas['Member'];
export type MemberList = Schemas['MemberList'];
export type UpdateMemberRequest = Schemas['UpdateMemberRequest'];

/** `metadata.KEY=VALUE` report filters, as `{ KEY: VALUE }`. */
type MetadataFilter = { metadata?: Record<string, string> };

export type ListEventsQuery = Query<'listEvents'>;
export type ReviewRequest = Schemas['ReviewRequest'];
export type ReviewVerdict = Schemas['ReviewVerdict'];
export type Review = Schemas['Review'];
export type ReviewResult = Schemas['ReviewResult'];
export type ReviewedEvent = Schemas['ReviewedEvent'];
export type EventFigures = Schemas['EventFigures'];
export type Adjustment = Schemas['Adjustment'];
export type EventAdjustments = Schemas['EventAdjustments'];
export type EventReviews = Schemas['EventReviews'];
export type ReportQuery = Omit<Query<'getTimeSavedReport'>, 'format'> & MetadataFilter;
export type LeaderboardQuery = Omit<Query<'getLeaderboard'>, 'format'> & MetadataFilter;
export type ExportQuery = Omit<Query<'exportReport'>, 'format'> & MetadataFilter;
export type ListTaskTypesQuery = Query<'listTaskTypes'>;
export type PageQuery = Query<'listWebhooks'>;
export type AssumptionVersion = Schemas['AssumptionVersion'];
export type AssumptionHistory = Schemas['AssumptionHistory'];
export type AssumptionHistoryQuery = Query<'listAssumptionHistory'>;
export type AssumptionChange = Schemas['AssumptionChange'];
export type RestatementRequest = Schemas['RestatementRequest'];
export type RestatementPreview = Schemas['RestatementPreview'];
export type Restatement = Schemas['Restatement'];
export type ForecastQuery = Query<'getForecast'> & MetadataFilter;
export type PaybackQuery = Query<'getPayback'>;
export type ListInvitationsQuery = Query<'listInvitations'>;

/** Webhook payloads (DESIGN §8): the body of every delivery, as signed. */
export interface WeeklyDigest {
  period: { from: string; to: string };
  currency: string;
  totals: DigestFigures;
  top_agents: Array<{ agent_id: string } & DigestFigures>;
  top_task_types: Array<{ task_type: string } & DigestFigures>;
}

/** A `weekly.digest` total or row: the week's figures with their reviews and restatements. */
export interface DigestFigures {
  events: number;
  hours_saved: number;
  cost_saved: number;
  agent_cost: number;
  net_saved: number;
  review_hours: number;
  review_cost: number;
}

/** `budget.threshold_crossed` and `budget.forecast_exceeded` (docs/budgets-and-forecasts.md). */
export interface BudgetAlert {
  budget: {
    id: string;
    name: string;
    scope: 'org' | 'agent' | 'client' | 'task_type';
    scope_value: string | null;
    amount: number;
    thresholds: number[];
  };
  currency: string;
  month: string;
  /** threshold_crossed only: the percentage and its amount. */
  threshold?: number;
  threshold_amount?: number;
  spend: number;
  percent_used: number;
  /** Null for a month that is over (an alert caught up after downtime). */
  forecast: {
    agent_cost: number;
    low: number;
    high: number;
    run_out_date: string | null;
    method: { name: string; description: string };
  } | null;
}

/** `usage.threshold_crossed`: the month's events, counted by time of receipt. */
export interface UsageAlert {
  month: string;
  plan: string;
  threshold: number;
  events_in_month: number;
  events_included_in_plan: number;
  percent_used: number;
  counted_by: 'received_at';
  crossed_at: string;
}

/** `figures.restated`: a change from a past date, once its adjustments are written. */
export interface FiguresRestated {
  restatement: Restatement;
  affected_events: number;
  delta: { hours_saved: number; cost_saved: number; net_saved: number };
  months: string[];
}

interface Envelope<T extends string, D> {
  id: string;
  type: T;
  created_at: string;
  data: D;
}

export type WebhookEnvelope =
  | Envelope<'event.created', Event>
  | Envelope<'agent.first_event', { agent_id: string; event: Event }>
  | Envelope<'weekly.digest', WeeklyDigest>
  | Envelope<'test.ping', { webhook_id: string; message: string; sent_at: string }>
  | Envelope<'budget.threshold_crossed', BudgetAlert & { crossed_at: string }>
  | Envelope<'budget.forecast_exceeded', BudgetAlert & { forecast_at: string }>
  | Envelope<'usage.threshold_crossed', UsageAlert>
  | Envelope<'figures.restated', FiguresRestated>
  | Envelope<'event.reviewed', { event: ReviewedEvent }>;
