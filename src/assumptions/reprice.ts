import { findBuiltin } from '../catalogue/builtins.js';
import { reviewFigures } from '../ledger/figures.js';
import type { Repricer as LedgerRepricer } from '../ledger/restatement.js';
import type { OrgCtx } from '../context.js';
import { getOrganization, type Organization, type Outcome } from '../orgs/organization-record.js';
import type { DbOrTrx } from '../storage/db.js';
import type { EventRow } from '../storage/schema.js';
import { computeSavings } from '../tracking/savings.js';
import { loadHistory, type AssumptionHistory } from './history.js';
import type { AssumptionChange } from './record.js';
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
} from './resolve.js';

/** What repricing an organisation's events needs: its settings, history and custom types. */
export interface Assumptions {
  org: Organization;
  history: AssumptionHistory;
  customs: ReadonlyMap<string, CustomTypeFacts>;
}

/** An event's figures under a history. Money and hours in micro-units. */
export interface RepricedFigures {
  resolved_baseline_minutes: number;
  resolved_baseline_source: BaselineSource;
  resolved_hourly_rate_micros: number;
  credit_micros: number;
  hours_saved_micros: number;
  cost_saved_micros: number;
  net_saved_micros: number;
  versions: VersionIds;
}

/** The figures an event shows now (its row's, or after its adjustments). */
export interface CurrentFigures {
  hours_saved_micros: number;
  cost_saved_micros: number;
}

type Row = Pick<
  EventRow,
  | 'task_type'
  | 'outcome'
  | 'occurred_at'
  | 'resolved_baseline_minutes'
  | 'resolved_baseline_source'
  | 'agent_cost_micros'
>;

/**
 * An event's figures under `a.history`, with the values in force at its occurred_at. Pure. The
 * event keeps its baseline's layer: a baseline from the request stays as it is; a built-in type
 * moves between its override and its default as overrides come and go; a custom type takes its
 * baseline then; a fallback baseline takes the fallback then, and keeps its own when there was
 * none. The hourly rate and the outcome credit are those in force then (DESIGN §4's order).
 */
export function reprice(event: Row, a: Assumptions): RepricedFigures {
  const at = Number(event.occurred_at);
  const taskType = event.task_type;
  const builtin = findBuiltin(taskType);
  const custom = builtin ? undefined : a.customs.get(taskType);
  let minutes = Number(event.resolved_baseline_minutes);
  let source = event.resolved_baseline_source as BaselineSource;
  let baselineId: string | null = null;
  let rate = rateAt(a.org, a.history, taskType, custom, at);
  if ((source === 'override' || source === 'builtin') && builtin) {
    const b = builtinBaselineAt(a.history, taskType, builtin.default_baseline_minutes, at);
    ({ minutes, source } = b);
    baselineId = b.id;
  } else if (source === 'custom' && custom) {
    const c = customBaselineAt(a.history, taskType, custom, at);
    minutes = c.minutes;
    baselineId = c.id;
  } else if (source === 'fallback') {
    const f = fallbackAt(a.org, a.history, at);
    if (f.value !== null) {
      minutes = f.value;
      baselineId = f.id;
    }
    rate = defaultRateAt(a.org, a.history, at);
  }
  const credit = creditAt(a.org, a.history, event.outcome as Outcome, at);
  const agentCost = event.agent_cost_micros === null ? null : Number(event.agent_cost_micros);
  const savings = computeSavings({
    baselineMinutes: minutes,
    creditMicros: credit.value,
    hourlyRateMicros: rate.value,
    agentCostMicros: agentCost,
  });
  return {
    resolved_baseline_minutes: minutes,
    resolved_baseline_source: source,
    resolved_hourly_rate_micros: rate.value,
    credit_micros: credit.value,
    hours_saved_micros: savings.hoursSavedMicros,
    cost_saved_micros: savings.costSavedMicros,
    net_saved_micros: savings.netSavedMicros,
    versions: { baseline: baselineId, hourly_rate: rate.id, outcome_credit: credit.id },
  };
}

/**
 * The function the ledger's restatement takes: an event's new figures under the history, or
 * null when its hours and cost saved stay as `current` (default: the event's stored figures).
 */
export type Repricer = (event: EventRow, current?: CurrentFigures) => RepricedFigures | null;

export function repricerOf(a: Assumptions): Repricer {
  return (event, current) => {
    const figures = reprice(event, a);
    const hours = current?.hours_saved_micros ?? Number(event.hours_saved_micros);
    const cost = current?.cost_saved_micros ?? Number(event.cost_saved_micros);
    return figures.hours_saved_micros === hours && figures.cost_saved_micros === cost ? null : figures;
  };
}

/**
 * The repricer in the ledger's terms (applyRestatement): an event's figures under the history,
 * from what the ledger tells of it now. A reviewed event keeps its review: its measured figures
 * are recomputed with the baseline and rate now in force at its date (docs/figures.md). The agent
 * cost is not an assumption's and stays. The ledger writes nothing for an event left as it is.
 */
export function ledgerRepricerOf(a: Assumptions): LedgerRepricer {
  return (event, current) => {
    const f = reprice(event, a);
    const pricing = {
      baselineMinutes: f.resolved_baseline_minutes,
      hourlyRateMicros: f.resolved_hourly_rate_micros,
    };
    if (current.review === null)
      return { hoursSavedMicros: f.hours_saved_micros, costSavedMicros: f.cost_saved_micros, ...pricing };
    return {
      ...reviewFigures({
        verdict: current.review.verdict,
        reviewMinutes: current.review.reviewMinutes,
        ...pricing,
      }),
      ...pricing,
    };
  };
}

/** Every custom type of the organisation (archived ones too: their events are repriced as well). */
export async function loadCustoms(db: DbOrTrx, orgId: string): Promise<Map<string, CustomTypeFacts>> {
  const rows = await db
    .selectFrom('custom_task_types')
    .select(['key', 'default_baseline_minutes', 'category', 'hourly_rate_micros', 'status'])
    .where('org_id', '=', orgId)
    .execute();
  return new Map(
    rows.map(({ key, ...facts }) => [
      key,
      {
        ...facts,
        hourly_rate_micros: facts.hourly_rate_micros === null ? null : Number(facts.hourly_rate_micros),
      },
    ]),
  );
}

/** The organisation's assumptions as stored, with `proposed` recorded after every version. */
export async function loadAssumptions(
  ctx: Pick<OrgCtx, 'db' | 'clock' | 'actorKeyId'>,
  orgId: string,
  proposed: AssumptionChange | null,
): Promise<Assumptions> {
  const org = await getOrganization({ ctx, id: orgId });
  let history = await loadHistory(ctx.db, orgId);
  if (proposed) {
    history = history.with({
      id: 'proposed',
      kind: proposed.kind,
      key: proposed.key,
      value: proposed.value,
      effectiveFrom: proposed.effectiveFrom,
      recordedAt: ctx.clock.now().getTime(),
      actorKeyId: ctx.actorKeyId,
      reason: proposed.reason ?? null,
      restatementId: proposed.restatementId ?? null,
    });
  }
  return { org, history, customs: await loadCustoms(ctx.db, orgId) };
}

/**
 * The repricing function of a restatement, for the ledger's applyRestatement: the organisation's
 * history as stored, with `proposedChange` added when it is not recorded yet (null once it is).
 */
export async function repricerFor(
  ctx: Pick<OrgCtx, 'db' | 'clock' | 'actorKeyId'>,
  orgId: string,
  proposedChange: AssumptionChange | null,
): Promise<Repricer> {
  return repricerOf(await loadAssumptions(ctx, orgId, proposedChange));
}
