import { validationError } from '../errors.js';
import type { Outcome } from '../orgs/organizations.js';
import { parseGroupBy, type Dimension, type Metric, type Period, type ReportInput } from './params.js';

/** The query string of a report route after schema validation (metadata.* keys included). */
export interface ReportQueryString {
  period?: Period;
  agent_id?: string;
  task_type?: string;
  client_id?: string;
  outcome?: Outcome;
  group_by?: string;
  sort?: Metric;
  metric?: Metric;
  top?: number;
}

/** `metadata.KEY=VALUE` filters one report may combine (README "Limits"). */
export const MAX_METADATA_FILTERS = 10;

/** Turns a validated query string into the report verb's input, with the route's defaults. */
export function reportInput(
  query: ReportQueryString,
  defaults: { sort: Metric; groupBy?: Dimension[] },
): ReportInput {
  const metadata: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(query)) {
    if (name.startsWith('metadata.') && typeof value === 'string') metadata.push([name.slice(9), value]);
  }
  if (metadata.length > MAX_METADATA_FILTERS) {
    throw validationError('/querystring', `must have at most ${MAX_METADATA_FILTERS} metadata.KEY filters`);
  }
  metadata.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    period: query.period ?? '30d',
    groupBy: defaults.groupBy ?? parseGroupBy(query.group_by ?? 'agent'),
    sort: query.metric ?? query.sort ?? defaults.sort,
    top: query.top ?? null,
    filters: {
      ...(query.agent_id === undefined ? {} : { agentId: query.agent_id }),
      ...(query.task_type === undefined ? {} : { taskType: query.task_type }),
      ...(query.client_id === undefined ? {} : { clientId: query.client_id }),
      ...(query.outcome === undefined ? {} : { outcome: query.outcome }),
      metadata,
    },
  };
}
