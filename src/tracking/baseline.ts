import { historyFor, type AssumptionHistory } from '../assumptions/history.js';
import {
  builtinBaselineAt,
  creditAt,
  customBaselineAt,
  defaultRateAt,
  fallbackAt,
  rateAt,
  type BaselineSource,
  type CustomTypeFacts,
  type VersionIds,
} from '../assumptions/resolve.js';
import { findBuiltin } from '../catalogue/builtins.js';
import { AppError } from '../errors.js';
import type { Organization, Outcome } from '../orgs/organization-record.js';
import type { DbOrTrx } from '../storage/db.js';

export type { BaselineSource, CustomTypeFacts } from '../assumptions/resolve.js';

export interface ResolvedBaseline {
  minutes: number;
  source: BaselineSource;
  hourlyRateMicros: number;
  creditMicros: number;
  /** The assumption versions that priced the event. */
  versions: VersionIds;
  /** `{"assumptions": versions}` as JSON, once written (versionsPricing). */
  versionsPricing?: string;
}

/** The organisation's assumption history and custom types for the task types of a batch. */
export interface CatalogueFacts {
  history: AssumptionHistory;
  customs: Map<string, CustomTypeFacts>;
}

/** Baselines a batch has resolved, by task type, outcome, request minutes and epoch (resolveBaselineOnce). */
export type ResolvedMemo = Map<string, { org: Organization; baseline: ResolvedBaseline }>;

/**
 * Loads what resolving `taskTypes` for `org` needs: its assumption history (kept per process
 * while the organisation's revision is unchanged, assumptions/history.ts) and, in one query,
 * the custom types among the keys.
 */
export async function loadCatalogueFacts(
  db: DbOrTrx,
  org: Organization,
  taskTypes: string[],
): Promise<CatalogueFacts> {
  const customKeys = taskTypes.filter((t) => !findBuiltin(t));
  const customs = new Map<string, CustomTypeFacts>();
  const history = await historyFor(db, org.id, org.assumptionsRevision);
  if (customKeys.length > 0) {
    const rows = await db
      .selectFrom('custom_task_types')
      .select(['key', 'default_baseline_minutes', 'category', 'hourly_rate_micros', 'status'])
      .where('org_id', '=', org.id)
      .where('key', 'in', customKeys)
      .execute();
    for (const { key, ...facts } of rows) customs.set(key, facts);
  }
  return { history, customs };
}

/**
 * resolveBaseline, remembered in `memo` for the batch: events of one task type, outcome and
 * request minutes whose occurred_at fall between the same two changes of the history (the same
 * epoch) and that come with the same organisation's settings get the same baseline, so a batch
 * resolves each combination once. Refusals are not remembered (their path differs).
 */
export function resolveBaselineOnce(
  memo: ResolvedMemo,
  org: Organization,
  facts: CatalogueFacts,
  taskType: string,
  outcome: Outcome,
  requestMinutes: number | null,
  at: number,
  path = '/body',
): ResolvedBaseline {
  const key = `${taskType}\n${outcome}\n${requestMinutes ?? ''}\n${facts.history.epochOf(at)}`;
  const hit = memo.get(key);
  if (hit && hit.org === org) return hit.baseline;
  const baseline = resolveBaseline(org, facts, taskType, outcome, requestMinutes, at, path);
  memo.set(key, { org, baseline });
  return baseline;
}

/** The stored `pricing` of an event whose agent cost was not computed: its versions alone. */
export function versionsPricing(baseline: ResolvedBaseline): string {
  // Kept on the baseline, which resolveBaselineOnce shares among a batch's events.
  baseline.versionsPricing ??= JSON.stringify({ assumptions: baseline.versions });
  return baseline.versionsPricing;
}

/**
 * DESIGN §4 with the values in force at `at` (the event's occurred_at): the first layer that
 * answers wins — request, override, custom, built-in, fallback. The hourly rate follows the task
 * type: the custom type's own rate, then the organisation's rate for the category, then its
 * default rate; the outcome credit is the organisation's for the outcome.
 */
export function resolveBaseline(
  org: Organization,
  facts: CatalogueFacts,
  taskType: string,
  outcome: Outcome,
  requestMinutes: number | null,
  at: number,
  path = '/body',
): ResolvedBaseline {
  const { history } = facts;
  const builtin = findBuiltin(taskType);
  const custom = builtin ? undefined : facts.customs.get(taskType);
  const credit = creditAt(org, history, outcome, at);
  const priced = (
    minutes: number,
    source: BaselineSource,
    baselineId: string | null,
    rate: { value: number; id: string | null },
  ) => ({
    minutes,
    source,
    hourlyRateMicros: rate.value,
    creditMicros: credit.value,
    versions: { baseline: baselineId, hourly_rate: rate.id, outcome_credit: credit.id },
  });

  if (requestMinutes !== null)
    return priced(requestMinutes, 'request', null, rateAt(org, history, taskType, custom, at));
  if (builtin) {
    const b = builtinBaselineAt(history, taskType, builtin.default_baseline_minutes, at);
    return priced(b.minutes, b.source, b.id, rateAt(org, history, taskType, undefined, at));
  }
  if (custom && custom.status === 'active') {
    const c = customBaselineAt(history, taskType, custom, at);
    return priced(c.minutes, 'custom', c.id, rateAt(org, history, taskType, custom, at));
  }
  const archived = custom?.status === 'archived';
  const fallback = fallbackAt(org, history, at);
  // Spec §3: an archived custom key fails even when the organisation has a fallback baseline.
  if (!archived && fallback.value !== null) {
    return priced(fallback.value, 'fallback', fallback.id, defaultRateAt(org, history, at));
  }
  throw new AppError(
    'unknown_task_type',
    archived
      ? `Task type "${taskType}" is archived; send human_baseline_minutes or use an active type.`
      : `Task type "${taskType}" is not in the catalogue; create it or send human_baseline_minutes.`,
    [{ path: `${path}/task_type`, message: archived ? 'is archived' : 'is not in the catalogue' }],
  );
}
