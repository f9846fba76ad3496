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

/** `metadata.KEY=VALUE` report filters, as `{ KEY: VALUE }`. */
type MetadataFilter = { metadata?: Record<string, string> };

export type ListEventsQuery = Query<'listEvents'>;
export type ReportQuery = Omit<Query<'getTimeSavedReport'>, 'format'> & MetadataFilter;
export type LeaderboardQuery = Omit<Query<'getLeaderboard'>, 'format'> & MetadataFilter;
export type ExportQuery = Omit<Query<'exportReport'>, 'format'> & MetadataFilter;
export type ListTaskTypesQuery = Query<'listTaskTypes'>;
export type PageQuery = Query<'listWebhooks'>;

/** Webhook payloads (DESIGN §8): the body of every delivery, as signed. */
export interface WeeklyDigest {
  period: { from: string; to: string };
  currency: string;
  totals: { events: number; hours_saved: number; cost_saved: number; agent_cost: number; net_saved: number };
  top_agents: ReportRow[];
  top_task_types: ReportRow[];
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
  | Envelope<'test.ping', { webhook_id: string; message: string; sent_at: string }>;
