import { sql } from 'kysely';
import type { DbOrTrx } from '../storage/db.js';
import { emptyAttributes, type Attributes, type ExportedSpan } from './spans.js';
import { otlpDb } from './tables.js';

/** Rows per statement: well below both engines' limits on bound parameters. */
const CHUNK = 500;

function chunks<T>(items: T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

// On a SQLite file these tables live in the events file beside the events (storage/events-file.ts).
// The functions that write take the database to write on: callers pass storage/db.ts trackDb, the
// track connection, on which a write does not wait for the folding stage's pass.

/** A held span's JSON: the span without its ids, which are columns of their own. */
type StoredSpan = Omit<ExportedSpan, 'traceId' | 'spanId' | 'parentSpanId'>;

function toRow(orgId: string, receivedAt: number, span: ExportedSpan) {
  const { traceId, spanId, parentSpanId, ...rest } = span;
  return {
    org_id: orgId,
    trace_id: traceId,
    span_id: spanId,
    parent_span_id: parentSpanId,
    received_at: receivedAt,
    span: JSON.stringify(rest satisfies StoredSpan),
  };
}

/** Attributes read back from JSON without a prototype, as decode.ts makes them. */
function attributes(value: unknown): Attributes {
  return Object.assign(emptyAttributes(), value);
}

function fromRow(row: {
  trace_id: string;
  span_id: string;
  parent_span_id: string;
  span: string;
}): ExportedSpan {
  const stored = JSON.parse(row.span) as StoredSpan;
  return {
    ...stored,
    traceId: row.trace_id,
    spanId: row.span_id,
    parentSpanId: row.parent_span_id,
    attributes: attributes(stored.attributes),
    evaluations: stored.evaluations.map(attributes),
    resource: attributes(stored.resource),
  };
}

/** Holds spans (a span sent again is held once: retries of one export change nothing). */
export async function holdSpans(db: DbOrTrx, orgId: string, receivedAt: number, spans: ExportedSpan[]) {
  for (const part of chunks(spans)) {
    await otlpDb(db)
      .insertInto('otlp_held_spans')
      .values(part.map((span) => toRow(orgId, receivedAt, span)))
      .onConflict((oc) => oc.columns(['org_id', 'trace_id', 'span_id']).doNothing())
      .execute();
  }
}

/** The held spans of these traces, by trace. */
export async function heldSpansOf(
  db: DbOrTrx,
  orgId: string,
  traceIds: string[],
): Promise<Map<string, ExportedSpan[]>> {
  const byTrace = new Map<string, ExportedSpan[]>();
  for (const part of chunks(traceIds)) {
    const rows = await otlpDb(db)
      .selectFrom('otlp_held_spans')
      .select(['trace_id', 'span_id', 'parent_span_id', 'span'])
      .where('org_id', '=', orgId)
      .where('trace_id', 'in', part)
      .execute();
    for (const row of rows) {
      const list = byTrace.get(row.trace_id) ?? [];
      list.push(fromRow(row));
      byTrace.set(row.trace_id, list);
    }
  }
  return byTrace;
}

/** Releases held spans a run took (or that were settled outside any run); returns how many were. */
export async function releaseSpans(
  db: DbOrTrx,
  orgId: string,
  spans: { traceId: string; spanId: string }[],
): Promise<number> {
  let released = 0;
  for (const part of chunks(spans)) {
    const result = await otlpDb(db)
      .deleteFrom('otlp_held_spans')
      .where('org_id', '=', orgId)
      .where((eb) =>
        eb(
          eb.refTuple('trace_id', 'span_id'),
          'in',
          part.map((s) => eb.tuple(s.traceId, s.spanId)),
        ),
      )
      .executeTakeFirst();
    released += Number(result.numDeletedRows);
  }
  return released;
}

/** Traces with a span held since `cutoff` or before (the hold bound has passed for them). */
export async function expiredTraces(
  db: DbOrTrx,
  cutoff: number,
  limit: number,
): Promise<{ orgId: string; traceId: string }[]> {
  const rows = await otlpDb(db)
    .selectFrom('otlp_held_spans')
    .select(['org_id', 'trace_id'])
    .where('received_at', '<=', cutoff)
    .groupBy(['org_id', 'trace_id'])
    .limit(limit)
    .execute();
  return rows.map((r) => ({ orgId: r.org_id, traceId: r.trace_id }));
}

/** Marks traces whose runs were tracked, so that spans of them held afterwards count as late. */
export async function markTracesDone(db: DbOrTrx, orgId: string, traceIds: string[], at: number) {
  for (const part of chunks(traceIds)) {
    await otlpDb(db)
      .insertInto('otlp_done_traces')
      .values(part.map((traceId) => ({ org_id: orgId, trace_id: traceId, done_at: at })))
      .onConflict((oc) => oc.columns(['org_id', 'trace_id']).doNothing())
      .execute();
  }
}

export async function isTraceDone(db: DbOrTrx, orgId: string, traceId: string): Promise<boolean> {
  const row = await otlpDb(db)
    .selectFrom('otlp_done_traces')
    .select('trace_id')
    .where('org_id', '=', orgId)
    .where('trace_id', '=', traceId)
    .executeTakeFirst();
  return row !== undefined;
}

export async function forgetDoneTraces(db: DbOrTrx, before: number): Promise<void> {
  await otlpDb(db).deleteFrom('otlp_done_traces').where('done_at', '<', before).execute();
}

/** Adds to service-wide totals of the organisation (read by /metrics and the dashboard). */
export async function addToCounters(db: DbOrTrx, orgId: string, amounts: Record<string, number>) {
  for (const [name, amount] of Object.entries(amounts)) {
    if (amount === 0) continue;
    await otlpDb(db)
      .insertInto('otlp_counters')
      .values({ org_id: orgId, name, value: amount })
      .onConflict((oc) =>
        oc.columns(['org_id', 'name']).doUpdateSet({ value: sql<number>`otlp_counters.value + ${amount}` }),
      )
      .execute();
  }
}

/** The totals, summed over organisations, or of one organisation. */
export async function readCounters(db: DbOrTrx, orgId?: string): Promise<Map<string, number>> {
  let query = otlpDb(db)
    .selectFrom('otlp_counters')
    .select(['name', (eb) => eb.fn.sum<number>('value').as('total')])
    .groupBy('name');
  if (orgId !== undefined) query = query.where('org_id', '=', orgId);
  const rows = await query.execute();
  return new Map(rows.map((r) => [r.name, Number(r.total)]));
}

/** Spans held now, across organisations or of one. */
export async function countHeldSpans(db: DbOrTrx, orgId?: string): Promise<number> {
  let query = otlpDb(db)
    .selectFrom('otlp_held_spans')
    .select((eb) => eb.fn.countAll<number>().as('n'));
  if (orgId !== undefined) query = query.where('org_id', '=', orgId);
  const row = await query.executeTakeFirst();
  return Number(row?.n ?? 0);
}
