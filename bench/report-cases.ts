/**
 * The reports bench:reports times (and bench:compare compares between two checkouts), and the
 * fixed "now" the seeded events are placed around.
 */
import { parseGroupBy, type Metric, type Period, type ReportInput } from '../src/reports/params.js';

export const NOW = '2026-11-20T13:37:00.000Z';

export interface Case {
  label: string;
  input: ReportInput;
}

export function report(
  label: string,
  groupBy: string,
  period: Period,
  sort: Metric,
  extra: Partial<ReportInput> = {},
): Case {
  return {
    label,
    input: { period, groupBy: parseGroupBy(groupBy), sort, top: null, filters: { metadata: [] }, ...extra },
  };
}

export const CASES: Case[] = [
  report('time-saved agent 24h', 'agent', '24h', 'hours_saved'),
  report('time-saved agent 7d', 'agent', '7d', 'hours_saved'),
  report('time-saved agent 30d', 'agent', '30d', 'hours_saved'),
  report('time-saved agent 90d', 'agent', '90d', 'hours_saved'),
  report('time-saved task_type 90d', 'task_type', '90d', 'hours_saved'),
  report('time-saved client,month all', 'client,month', 'all', 'hours_saved'),
  report('time-saved day 90d', 'day', '90d', 'hours_saved'),
  report('time-saved agent,week 90d', 'agent,week', '90d', 'hours_saved'),
  report('time-saved agent,day 30d', 'agent,day', '30d', 'hours_saved'),
  report('cost-saved task_type 30d', 'task_type', '30d', 'cost_saved'),
  report('cost-saved agent 90d outcome=success', 'agent', '90d', 'cost_saved', {
    filters: { outcome: 'success', metadata: [] },
  }),
  report('cost-saved client ytd', 'client', 'ytd', 'net_saved'),
  report('leaderboard net_saved 90d top 10', 'agent', '90d', 'net_saved', { top: 10 }),
  report('leaderboard events 30d top 10', 'agent', '30d', 'events', { top: 10 }),
  report('time-saved agent 30d task_type=X', 'agent', '30d', 'hours_saved', {
    filters: { taskType: 'dev_code_review', metadata: [] },
  }),
  report('time-saved agent,task_type 30d', 'agent,task_type', '30d', 'hours_saved'),
  report('leaderboard agent,task_type 90d top 10', 'agent,task_type', '90d', 'net_saved', { top: 10 }),
  report('time-saved agent,client 30d', 'agent,client', '30d', 'hours_saved'),
  report('time-saved agent,client 90d', 'agent,client', '90d', 'hours_saved'),
  report('time-saved task_type,client 90d', 'task_type,client', '90d', 'hours_saved'),
  report('time-saved agent,task_type,client 30d', 'agent,task_type,client', '30d', 'hours_saved'),
  report('leaderboard agent,task_type,client 90d top 10', 'agent,task_type,client', '90d', 'net_saved', {
    top: 10,
  }),
  report('cost-saved agent,client,week 90d', 'agent,client,week', '90d', 'cost_saved'),
  report('cost-saved agent,client 90d outcome=success', 'agent,client', '90d', 'cost_saved', {
    filters: { outcome: 'success', metadata: [] },
  }),
  report(
    'time-saved agent,task_type,client 30d outcome=failure',
    'agent,task_type,client',
    '30d',
    'hours_saved',
    {
      filters: { outcome: 'failure', metadata: [] },
    },
  ),
  report('time-saved agent 30d client_id=X', 'agent', '30d', 'hours_saved', {
    filters: { clientId: 'client-03', metadata: [] },
  }),
  // Served as the client filter: metadata.client_id is the client dimension.
  report('time-saved agent 30d metadata.client_id=X', 'agent', '30d', 'hours_saved', {
    filters: { metadata: [['client_id', 'client-03']] },
  }),
  // No rollup keeps other metadata: this one runs on raw events, by design.
  report('time-saved agent 30d metadata.channel=X (raw)', 'agent', '30d', 'hours_saved', {
    filters: { metadata: [['channel', 'chat']] },
  }),
];
