import { DAY_MS, GRAINS, type Grain, type Keyed } from './rollups.js';
import type { Dimension, ReportFilters, ReportRange } from './params.js';

/** One piece of a report's window: whole days from a rollup, or raw events for a time span. */
export type Source =
  | { kind: 'rollup'; grain: Grain; fromDay: number; toDay: number }
  | { kind: 'raw'; from: number; to: number };

const KEYED: readonly Dimension[] = ['agent', 'task_type', 'client'];

/** The keyed dimensions a report touches through its group_by or its filters. */
function keyedDimensions(groupBy: readonly Dimension[], filters: ReportFilters): Set<Keyed> {
  const dims = new Set<Keyed>();
  for (const d of groupBy) if (KEYED.includes(d)) dims.add(d as Keyed);
  if (filters.agentId !== undefined) dims.add('agent');
  if (filters.taskType !== undefined) dims.add('task_type');
  if (filters.clientId !== undefined) dims.add('client');
  return dims;
}

/** The grain that keeps exactly the dimensions the report touches, or null when only raw events can answer. */
export function chooseGrain(groupBy: readonly Dimension[], filters: ReportFilters): Grain | null {
  if (filters.metadata.length > 0) return null;
  const dims = keyedDimensions(groupBy, filters);
  for (const [grain, kept] of Object.entries(GRAINS) as Array<[Grain, readonly Keyed[]]>) {
    if (kept.length === dims.size && kept.every((d) => dims.has(d))) return grain;
  }
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
  const sources: Source[] = [{ kind: 'rollup', grain, fromDay, toDay }];
  if (from < fromDay * DAY_MS) sources.push({ kind: 'raw', from, to: fromDay * DAY_MS });
  if (toDay * DAY_MS < to) sources.push({ kind: 'raw', from: toDay * DAY_MS, to });
  return sources;
}
