import { sql } from 'kysely';
import { fromMicros } from '../money.js';
import { takeSqliteWriteLock, type DbOrTrx, type Engine } from '../storage/db.js';
import type { AdjustmentRow, EventRow } from '../storage/schema.js';
import { figuresAdd, figuresView, type Figures } from './figures.js';

/**
 * The adjustments ledger (docs/architecture.md "The adjustments ledger"): every change to an
 * event's figures is an entry, a signed delta linked to its cause, and the event's own row is
 * never rewritten. Its current figures are its original ones plus its entries.
 */

export type AdjustmentCause = 'review' | 'restatement';

export interface NewAdjustment {
  id: string;
  event: EventRow;
  cause: AdjustmentCause;
  causeId: string;
  delta: Figures;
  /** The baseline and hourly rate in force after this entry, when it changes them. */
  baselineMinutes?: number | null;
  hourlyRateMicros?: number | null;
  at: number;
}

/** The first key of the advisory lock taken while an event's figures change (apart from the fold's). */
const EVENT_LOCK = 7_311_020;

/**
 * Serialises the changes of one event's figures, in the open transaction: an entry is computed
 * from the figures in force, which no other change may move meanwhile. PostgreSQL: an advisory
 * lock of the event; SQLite: the main file's write lock, taken before the figures are read.
 */
export async function lockEventFigures(trx: DbOrTrx, engine: Engine, orgId: string, eventId: string) {
  if (engine === 'postgres')
    await sql`SELECT pg_advisory_xact_lock(${EVENT_LOCK}, hashtext(${`${orgId}\n${eventId}`}))`.execute(trx);
  else await takeSqliteWriteLock(trx);
}

/**
 * Writes entries in the open transaction. Their `ingest_seq` places them in commit order, as
 * events': PostgreSQL gives the transaction's id (the column's default); on SQLite, whose main
 * file has one writer (the caller holds its write lock), every entry of the transaction takes the
 * number after the largest stored.
 */
export async function insertAdjustments(
  trx: DbOrTrx,
  engine: Engine,
  entries: readonly NewAdjustment[],
): Promise<void> {
  if (entries.length === 0) return;
  let seq: number | undefined;
  if (engine === 'sqlite') {
    const row = await trx
      .selectFrom('adjustments')
      .select((eb) => eb.fn.max('ingest_seq').as('last'))
      .executeTakeFirst();
    seq = Number(row?.last ?? 0) + 1;
  }
  for (let i = 0; i < entries.length; i += 200) {
    await trx
      .insertInto('adjustments')
      .values(
        entries.slice(i, i + 200).map((e) => ({
          id: e.id,
          org_id: e.event.org_id,
          event_id: e.event.id,
          cause: e.cause,
          cause_id: e.causeId,
          agent_id: e.event.agent_id,
          task_type: e.event.task_type,
          outcome: e.event.outcome,
          client_id: e.event.client_id,
          occurred_at: Number(e.event.occurred_at),
          hours_saved_micros: e.delta.hoursSavedMicros,
          cost_saved_micros: e.delta.costSavedMicros,
          agent_cost_micros: e.delta.agentCostMicros,
          review_hours_micros: e.delta.reviewHoursMicros,
          review_cost_micros: e.delta.reviewCostMicros,
          baseline_minutes: e.baselineMinutes ?? null,
          hourly_rate_micros: e.hourlyRateMicros ?? null,
          created_at: e.at,
          ...(seq === undefined ? {} : { ingest_seq: seq }),
        })),
      )
      .execute();
  }
}

/** The figures an event's own row holds. */
export function originalFigures(event: EventRow): Figures {
  return {
    hoursSavedMicros: Number(event.hours_saved_micros),
    costSavedMicros: Number(event.cost_saved_micros),
    agentCostMicros: Number(event.agent_cost_micros ?? 0),
    reviewHoursMicros: 0,
    reviewCostMicros: 0,
  };
}

export function adjustmentFigures(row: AdjustmentRow): Figures {
  return {
    hoursSavedMicros: Number(row.hours_saved_micros),
    costSavedMicros: Number(row.cost_saved_micros),
    agentCostMicros: Number(row.agent_cost_micros),
    reviewHoursMicros: Number(row.review_hours_micros),
    reviewCostMicros: Number(row.review_cost_micros),
  };
}

/** An event's figures: original, its entries in commit order, current, and the pricing in force. */
export interface EventLedger {
  event: EventRow;
  original: Figures;
  adjustments: AdjustmentRow[];
  current: Figures;
  baselineMinutes: number;
  hourlyRateMicros: number;
}

/** The event's entries, in commit order. */
export async function eventAdjustments(
  db: DbOrTrx,
  orgId: string,
  eventId: string,
): Promise<AdjustmentRow[]> {
  return db
    .selectFrom('adjustments')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('event_id', '=', eventId)
    .orderBy('ingest_seq')
    .orderBy('id')
    .execute();
}

export function ledgerOf(event: EventRow, adjustments: AdjustmentRow[]): EventLedger {
  const original = originalFigures(event);
  let current = original;
  let baselineMinutes = Number(event.resolved_baseline_minutes);
  let hourlyRateMicros = Number(event.resolved_hourly_rate_micros);
  for (const row of adjustments) {
    current = figuresAdd(current, adjustmentFigures(row));
    if (row.baseline_minutes !== null) baselineMinutes = Number(row.baseline_minutes);
    if (row.hourly_rate_micros !== null) hourlyRateMicros = Number(row.hourly_rate_micros);
  }
  return { event, original, adjustments, current, baselineMinutes, hourlyRateMicros };
}

export async function readEventLedger(db: DbOrTrx, event: EventRow): Promise<EventLedger> {
  return ledgerOf(event, await eventAdjustments(db, event.org_id, event.id));
}

export function adjustmentView(row: AdjustmentRow) {
  const f = adjustmentFigures(row);
  return {
    id: row.id,
    event_id: row.event_id,
    cause: row.cause as AdjustmentCause,
    cause_id: row.cause_id,
    ...figuresView(f),
    baseline_minutes: row.baseline_minutes === null ? null : Number(row.baseline_minutes),
    hourly_rate: row.hourly_rate_micros === null ? null : fromMicros(Number(row.hourly_rate_micros)),
    created_at: new Date(Number(row.created_at)).toISOString(),
  };
}
