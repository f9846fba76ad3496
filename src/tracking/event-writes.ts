import { CompiledQuery, PostgresAdapter, type QueryCreator } from 'kysely';
import type { DbOrTrx } from '../storage/db.js';
import { insertEachRow, insertRows, runEachRow, type PgType } from '../storage/insert-rows.js';
import type { Database, EventRow } from '../storage/schema.js';

// Events per write: on PostgreSQL one statement (one array per column); on SQLite each event
// is a one-row insert.
export const EVENTS_PER_WRITE = 500;

/**
 * Writes new events with the agents seen for the first time (DESIGN §4, §11). Nothing else: the
 * report rollups, the usage counts and the webhook messages are derived from the stored events
 * by the folding stage (DESIGN §11), so the request writes one row per event whatever the number
 * of report grains or webhooks. On PostgreSQL each chunk is one statement (the events and the
 * agents in data-modifying CTEs) and every event takes its transaction's id as `ingest_seq`;
 * on SQLite, one writer at a time, the events are numbered after the largest `ingest_seq`
 * stored. Returns the ids of the events that are the first of their agent.
 */
export async function writeEvents(
  db: DbOrTrx,
  rows: readonly EventRow[],
  known?: KnownAgents,
): Promise<Set<string>> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const firsts = new Set<string>();
  let next = postgres ? 0 : await nextIngestSeq(db);
  for (let i = 0; i < rows.length; i += EVENTS_PER_WRITE) {
    const chunk = rows.slice(i, i + EVENTS_PER_WRITE);
    const agents = firstAgents(chunk, known);
    let inserted;
    if (postgres) {
      const sources: WriteSources = [chunk, agents];
      const template = pgWriteTemplate(db);
      inserted = template
        ? (await db.executeQuery<{ first_event_id: string }>(bindTemplate(template, sources))).rows
        : await pgWriteStatement(db, sources).execute();
    } else {
      const numbered = chunk.map((row) => ({ ...row, ingest_seq: next++ }));
      await insertEachRow(db, 'events', SQLITE_EVENT_COLUMNS, numbered);
      inserted = await runEachRow<AgentRow, { first_event_id: string }>(
        db,
        'insert agents',
        AGENT_COLUMNS,
        agents,
        (placeholders) => insertAgents(db, [placeholders]),
      );
    }
    for (const r of inserted) firsts.add(r.first_event_id);
  }
  return firsts;
}

/**
 * SQLite: the position after the last event stored (the write lock is taken with the insert).
 * A statement without parameters, run once through runEachRow for its text built once.
 */
async function nextIngestSeq(db: DbOrTrx): Promise<number> {
  const [row] = await runEachRow<object, { last: number | null }>(db, 'last ingest_seq', {}, [{}], () =>
    db.selectFrom('events').select((eb) => eb.fn.max('ingest_seq').as('last')),
  );
  return Number(row?.last ?? 0) + 1;
}

export const EVENT_COLUMNS: { readonly [K in keyof Omit<EventRow, 'ingest_seq'>]: PgType } = {
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

const SQLITE_EVENT_COLUMNS = { ...EVENT_COLUMNS, ingest_seq: 'bigint' } as const;

function insertEvents(db: DbOrTrx, rows: readonly Omit<EventRow, 'ingest_seq'>[]) {
  return insertRows(db, 'events', EVENT_COLUMNS, rows);
}

interface AgentRow {
  org_id: string;
  agent_id: string;
  first_event_id: string;
  first_seen_at: EventRow['received_at'];
}

const AGENT_COLUMNS = {
  org_id: 'text',
  agent_id: 'text',
  first_event_id: 'text',
  first_seen_at: 'bigint',
} as const;

/** At most this many agents are remembered per batcher; past it, the memory starts again. */
const MAX_KNOWN_AGENTS = 100_000;

/**
 * Agents whose row this process saw committed. Agent rows are never deleted, so an event of one
 * of them needs no insert of its agent (which would find the row and do nothing): on SQLite that
 * was ~4 % of the event loop under `bench:track`'s 200 agents, one statement per agent per
 * batch. Only committed agents are added (TrackBatcher, after its commit): an agent of a
 * transaction that rolled back is inserted again by its next event.
 */
export class KnownAgents {
  private readonly keys = new Set<string>();

  has(orgId: string, agentId: string): boolean {
    return this.keys.has(`${orgId}\n${agentId}`);
  }

  add(orgId: string, agentId: string): void {
    if (this.keys.size >= MAX_KNOWN_AGENTS) this.keys.clear();
    this.keys.add(`${orgId}\n${agentId}`);
  }
}

/**
 * Each agent's first event in `rows`, in sorted order (concurrent transactions take them so),
 * but for the agents `known` to be stored already.
 */
function firstAgents(rows: readonly EventRow[], known?: KnownAgents): AgentRow[] {
  const firsts = new Map<string, EventRow>();
  for (const row of rows) {
    const key = `${row.org_id}\n${row.agent_id}`;
    if (!firsts.has(key) && !known?.has(row.org_id, row.agent_id)) firsts.set(key, row);
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
  return insertRows(db, 'agents', AGENT_COLUMNS, agents, into)
    .onConflict((oc) => oc.columns(['org_id', 'agent_id']).doNothing())
    .returning('first_event_id');
}

type WriteSources = [events: readonly EventRow[], agents: readonly AgentRow[]];

/**
 * PostgreSQL: one statement, the events in a data-modifying CTE and the agents as the
 * statement's own insert.
 */
function pgWriteStatement(db: DbOrTrx, [events, agents]: WriteSources) {
  return insertAgents(
    db,
    agents,
    db.with('new_events', () => insertEvents(db, events)),
  );
}

/** The compiled write statement, with the source row set and column of each parameter. */
interface WriteTemplate {
  sql: string;
  slots: Array<[source: number, column: string]>;
}

const MARK = '\u0000tally-slot\u0000';
const templates = new WeakMap<object, WriteTemplate | null>();

/**
 * The write statement's rows go in as one array per column, so its text is the same for any
 * rows: it is built and compiled once (per adapter), from one marker row per source whose every
 * column reads as its own name, and each batch only puts its rows' columns into the parameters.
 * Null when a parameter is not such a column (then the statement is built per batch).
 */
function pgWriteTemplate(db: DbOrTrx): WriteTemplate | null {
  const adapter = db.getExecutor().adapter;
  let template = templates.get(adapter);
  if (template !== undefined) return template;
  const marker = (source: number) =>
    new Proxy({}, { get: (_target, column) => `${MARK}${source}:${String(column)}` });
  const markers = [0, 1].map((source) => [marker(source)]);
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
  templates.set(adapter, template);
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
