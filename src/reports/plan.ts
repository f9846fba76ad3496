import { DAY_MS, clientKey, type Grain } from './rollups.js';
import type { Dimension, ReportFilters, ReportRange } from './params.js';

/** One piece of a report's window: whole days from a rollup, or raw events for a time span. */
export type Source =
  | { kind: 'rollup'; grain: Grain; fromDay: number; toDay: number; key: string | null }
  | { kind: 'raw'; from: number; to: number };

const KEYED = ['agent', 'task_type', 'client'] as const;
type Keyed = (typeof KEYED)[number];

/** The keyed dimensions a report touches through its group_by or its filters. */
function keyedDimensions(groupBy: readonly Dimension[], filters: ReportFilters): Set<Keyed> {
  const dims = new Set<Keyed>();
  for (const d of groupBy) if ((KEYED as readonly string[]).includes(d)) dims.add(d as Keyed);
  if (filters.agentId !== undefined) dims.add('agent');
  if (filters.taskType !== undefined) dims.add('task_type');
  if (filters.clientId !== undefined) dims.add('client');
  return dims;
}

function filterKey(grain: Grain, filters: ReportFilters): string | null {
  if (grain === 'agent') return filters.agentId ?? null;
  if (grain === 'task_type') return filters.taskType ?? null;
  if (grain === 'client') return filters.clientId === undefined ? null : clientKey(filters.clientId);
  return null;
}

/** The one rollup grain that answers the report, or null when only raw events can. */
export function chooseGrain(groupBy: readonly Dimension[], filters: ReportFilters): Grain | null {
  if (filters.metadata.length > 0) return null;
  const dims = [...keyedDimensions(groupBy, filters)];
  if (dims.length === 0) return 'all';
  if (dims.length === 1 && dims[0] !== undefined) return dims[0];
  return null;
}

/**
 * Whole UTC days inside the window come from the rollup; the partial days at its edges (and
 * everything, when no rollup covers the report) from raw events by occurred_at.
 */
export function planSources(
  range: ReportRange,
  groupBy: readonly Dimension[],
  filters: ReportFilters,
  options: { forceRaw?: boolean } = {},
): Source[] {
  const { from, endExclusive: to } = range;
  const grain = options.forceRaw ? null : chooseGrain(groupBy, filters);
  const fromDay = Math.ceil(from / DAY_MS);
  const toDay = Math.floor(to / DAY_MS);
  if (grain === null || fromDay >= toDay) return [{ kind: 'raw', from, to }];
  const sources: Source[] = [{ kind: 'rollup', grain, fromDay, toDay, key: filterKey(grain, filters) }];
  if (from < fromDay * DAY_MS) sources.push({ kind: 'raw', from, to: fromDay * DAY_MS });
  if (toDay * DAY_MS < to) sources.push({ kind: 'raw', from: toDay * DAY_MS, to });
  return sources;
}
