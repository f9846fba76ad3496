import { CompiledQuery, PostgresAdapter, type QueryCreator } from 'kysely';
import { addUsage, usageMonth, type UsageIncrement } from '../billing/usage-counter.js';
import { applyRollupDeltas, rollupDeltas, upsertRollups, type RollupDelta } from '../reports/rollups.js';
import type { DbOrTrx } from '../storage/db.js';
import { insertEachRow, insertRows, type PgType } from '../storage/insert-rows.js';
import type { Database, EventRow } from '../storage/schema.js';

// Events per write: on PostgreSQL one statement (one array per column); on SQLite each event
// is a one-row insert and each of its rollup rows (up to 20 per event) a one-row upsert.
const CHUNK = 200;

/**
 * Writes new events with the rows that change with them (DESIGN §4): the agents seen for the
 * first time, the report rollups in the caller's `shard`, and the month's usage of the
 * organisations in `countUsageOf` (plans without a cap; capped plans are counted before the
 * insert). On PostgreSQL each chunk is one statement of data-modifying CTEs: one round trip
 * instead of four. Returns the ids of the events that are the first of their agent.
 */
export async function writeEvents(
  db: DbOrTrx,
  rows: readonly EventRow[],
  { shard, countUsageOf }: { shard: number; countUsageOf: ReadonlySet<string> },
): Promise<Set<string>> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const firsts = new Set<string>();
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = rows.slice(i, i + CHUNK);
    const usage = usageIncrements(
      chunk.filter((row) => countUsageOf.has(row.org_id)),
      shard,
    );
    const deltas = rollupDeltas(chunk, shard);
    let inserted;
    if (postgres) {
      const sources: WriteSources = [chunk, usage, deltas, firstAgents(chunk)];
      const template = pgWriteTemplate(db, usage.length > 0);
      inserted = template
        ? (await db.executeQuery<{ first_event_id: string }>(bindTemplate(template, sources))).rows
        : await pgWriteStatement(db, sources).execute();
    } else {
      await insertEachRow(db, 'events', EVENT_COLUMNS, chunk);
      inserted = await insertAgents(db, firstAgents(chunk)).execute();
      await applyRollupDeltas(db, deltas);
      if (usage.length > 0) await addUsage(db, usage).execute();
    }
    for (const r of inserted) firsts.add(r.first_event_id);
  }
  return firsts;
}

const EVENT_COLUMNS: { readonly [K in keyof EventRow]: PgType } = {
  id: 'text',
  org_id: 'text',
  agent_id: 'text',
  task_type: 'text',
  outcome: 'text',
  client_id: 'text',
  resolved_baseline_minutes: 'double precision',
  resolved_baseline_source: 'text',
  resolved_hourly_rate_micros: 'bigint',
  currency: 'text',
  agent_duration_seconds: 'double precision',
  hours_saved_micros: 'bigint',
  cost_saved_micros: 'bigint',
  agent_cost_micros: 'bigint',
  resolved_cost_source: 'text',
  model: 'text',
  tokens_in: 'bigint',
  tokens_out: 'bigint',
  metadata: 'text',
  audit_sample: 'text',
  pricing: 'text',
  occurred_at: 'bigint',
  received_at: 'bigint',
  idempotency_key: 'text',
};

function insertEvents(db: DbOrTrx, rows: readonly EventRow[]) {
  return insertRows(db, 'events', EVENT_COLUMNS, rows);
}

interface AgentRow {
  org_id: string;
  agent_id: string;
  first_event_id: string;
  first_seen_at: EventRow['received_at'];
}

/** Each agent's first event in `rows`, in sorted order (concurrent transactions take them so). */
function firstAgents(rows: readonly EventRow[]): AgentRow[] {
  const firsts = new Map<string, EventRow>();
  for (const row of rows) {
    const key = `${row.org_id}\n${row.agent_id}`;
    if (!firsts.has(key)) firsts.set(key, row);
  }
  return [...firsts.values()]
    .sort((a, b) =>
      a.org_id === b.org_id ? a.agent_id.localeCompare(b.agent_id) : a.org_id.localeCompare(b.org_id),
    )
    .map((r) => ({
      org_id: r.org_id,
      agent_id: r.agent_id,
      first_event_id: r.id,
      first_seen_at: r.received_at,
    }));
}

/** Records each agent's first event; returns the ids of the events that were. */
function insertAgents(
  db: DbOrTrx,
  agents: readonly AgentRow[],
  into: Pick<QueryCreator<Database>, 'insertInto'> = db,
) {
  const columns = {
    org_id: 'text',
    agent_id: 'text',
    first_event_id: 'text',
    first_seen_at: 'bigint',
  } as const;
  return insertRows(db, 'agents', columns, agents, into)
    .onConflict((oc) => oc.columns(['org_id', 'agent_id']).doNothing())
    .returning('first_event_id');
}

type WriteSources = [
  events: readonly EventRow[],
  usage: readonly UsageIncrement[],
  rollups: readonly RollupDelta[],
  agents: readonly AgentRow[],
];

/**
 * PostgreSQL: one statement of data-modifying CTEs. PostgreSQL runs the statement's own insert
 * (the agents) first, then its CTEs last to first: rows are taken in the same order as on
 * SQLite, agents before the shared rows.
 */
function pgWriteStatement(db: DbOrTrx, [events, usage, deltas, agents]: WriteSources) {
  const newEvents = () => insertEvents(db, events);
  const rollups = () => upsertRollups(db, deltas);
  const statement =
    usage.length > 0
      ? db
          .with('new_events', newEvents)
          .with('usage', () => addUsage(db, usage))
          .with('rollups', rollups)
      : db.with('new_events', newEvents).with('rollups', rollups);
  return insertAgents(db, agents, statement);
}

/** The compiled write statement, with the source row set and column of each parameter. */
interface WriteTemplate {
  sql: string;
  slots: Array<[source: number, column: string]>;
}

const MARK = '\u0000tally-slot\u0000';
const templates = new WeakMap<object, Map<boolean, WriteTemplate | null>>();

/**
 * The write statement's rows go in as one array per column, so its text is the same for any
 * rows: it is built and compiled once (per adapter, with and without usage), from one marker row
 * per source whose every column reads as its own name, and each batch only puts its rows' columns
 * into the parameters. Null when a parameter is not such a column (then the statement is built
 * per batch, as before).
 */
function pgWriteTemplate(db: DbOrTrx, withUsage: boolean): WriteTemplate | null {
  const adapter = db.getExecutor().adapter;
  let byShape = templates.get(adapter);
  if (!byShape) {
    byShape = new Map();
    templates.set(adapter, byShape);
  }
  let template = byShape.get(withUsage);
  if (template !== undefined) return template;
  const marker = (source: number) =>
    new Proxy({}, { get: (_target, column) => `${MARK}${source}:${String(column)}` });
  const markers = [0, 1, 2, 3].map((source) => (source === 1 && !withUsage ? [] : [marker(source)]));
  const compiled = pgWriteStatement(db, markers as unknown as WriteSources).compile();
  const slots: WriteTemplate['slots'] = [];
  for (const parameter of compiled.parameters) {
    const value: unknown = Array.isArray(parameter) && parameter.length === 1 ? parameter[0] : null;
    if (typeof value !== 'string' || !value.startsWith(MARK)) break;
    const [source, column] = value.slice(MARK.length).split(':', 2);
    if (source === undefined || column === undefined) break;
    slots.push([Number(source), column]);
  }
  template = slots.length === compiled.parameters.length ? { sql: compiled.sql, slots } : null;
  byShape.set(withUsage, template);
  return template;
}

function bindTemplate(
  template: WriteTemplate,
  sources: WriteSources,
): CompiledQuery<{ first_event_id: string }> {
  const parameters = template.slots.map(([source, column]) =>
    (sources[source] as ReadonlyArray<Record<string, unknown>>).map((row) => row[column] ?? null),
  );
  return CompiledQuery.raw(template.sql, parameters);
}

/** One increment per organisation and month, in sorted order (the counter rows are shared). */
function usageIncrements(rows: readonly EventRow[], shard: number): UsageIncrement[] {
  const byKey = new Map<string, UsageIncrement>();
  for (const row of rows) {
    const month = usageMonth(new Date(row.received_at));
    const key = `${row.org_id} ${month}`;
    const increment = byKey.get(key);
    if (increment) increment.events += 1;
    else byKey.set(key, { org_id: row.org_id, month, shard, events: 1 });
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, increment]) => increment);
}
