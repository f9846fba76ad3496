import {
  CompiledQuery,
  sql,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
} from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitCapped, usageMonth } from '../../src/billing/usage-counter.js';
import { getUsage } from '../../src/billing/usage.js';
import type { OrgCtx, ServiceCtx } from '../../src/context.js';
import { parseGroupBy, type ReportInput } from '../../src/reports/params.js';
import { buildReport, streamReport } from '../../src/reports/report.js';
import { DAY_MS } from '../../src/reports/rollups.js';
import type { Db, Engine } from '../../src/storage/db.js';
import { foldBacklog } from '../../src/fold/backlog.js';
import { foldOnce } from '../../src/fold/pass.js';
import { foldLag } from '../../src/fold/tail.js';
import { TailMeter } from '../../src/fold/tail-meter.js';
import { trackEvent } from '../../src/tracking/track.js';
import { createWebhook } from '../../src/webhooks/subscriptions.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { PAUSED } from '../fold/derived.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');
/**
 * The history: events of many organisations, one in HISTORY_EVERY of them the tested
 * organisation's, all folded (below the watermark). The tested organisation holds less than
 * PostgreSQL's guess of the tail after a watermark past its statistics (about 1 % of the table):
 * the size of organisation for which it walked the organisation's events instead of the tail.
 */
const HISTORY = 60_000;
const HISTORY_EVERY = 600;
const CROWD = 60;
/** The tail: tracked and not folded. More of the tested organisation's than a message chunk. */
const TAIL = 24;
const MESSAGE_CHUNK = 5;

/** A statement as it was sent: its text and parameters. */
interface Statement {
  sql: string;
  parameters: readonly unknown[];
}

/** Records every statement run through the database handle it is plugged into. */
class Recorder implements KyselyPlugin {
  statements: Statement[] = [];

  constructor(private readonly db: Db) {}

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const compiled = this.db.getExecutor().compileQuery(args.node, args.queryId);
    this.statements.push({ sql: compiled.sql, parameters: compiled.parameters });
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }

  /** The statements recorded since the last call that read the events' tail (`ingest_seq >=`). */
  takeTailReads(): Statement[] {
    // Statements of the adjustments ledger alone (src/ledger/) read no events: their own table
    // and indexes.
    const taken = this.statements.filter(
      (s) => /\bingest_seq"?\s*>=/.test(s.sql) && /\bFROM\s+"?events"?\b/.test(s.sql),
    );
    this.statements = [];
    return taken;
  }
}

/**
 * How a plan reads the events: 'tail' seeks events_ingest_seq from a lower bound on ingest_seq
 * (the watermark, or a position after it); 'window' seeks the organisation's events of a span of
 * time (a report's edges, events_org_occurred bounded on both sides); anything else — walking
 * the organisation's events, or the table — is 'other', with what the plan says.
 */
type Read = 'tail' | 'window' | { other: string };

function sqliteReads(details: readonly string[]): Read[] {
  return details
    .filter((d) => /^(SCAN|SEARCH) events\b/.test(d))
    .map((d) => {
      if (/^SEARCH events USING (COVERING )?INDEX events_ingest_seq \(ingest_seq>\?/.test(d)) return 'tail';
      if (
        /^SEARCH events USING INDEX events_org_occurred \(org_id=\? AND occurred_at>\? AND occurred_at<\?\)/.test(
          d,
        )
      )
        return 'window';
      return { other: d };
    });
}

interface PgNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PgNode[];
}

function pgReads(root: PgNode): Read[] {
  const reads: Read[] = [];
  const classify = (index: string | undefined, cond: string, what: string): Read => {
    if (index === 'events_ingest_seq' && /\bingest_seq >= /.test(cond)) return 'tail';
    if (
      index === 'events_org_occurred' &&
      /org_id = /.test(cond) &&
      /occurred_at >= /.test(cond) &&
      /occurred_at < /.test(cond)
    )
      return 'window';
    return { other: `${what} ${index ?? ''} ${cond}`.trim() };
  };
  const walk = (node: PgNode) => {
    const type = node['Node Type'];
    if (node['Relation Name'] === 'events') {
      if (type === 'Index Scan' || type === 'Index Only Scan') {
        reads.push(classify(node['Index Name'], node['Index Cond'] ?? '', type));
      } else if (
        type === 'Bitmap Heap Scan' &&
        node.Plans?.length === 1 &&
        node.Plans[0]?.['Node Type'] === 'Bitmap Index Scan'
      ) {
        const scan = node.Plans[0];
        reads.push(classify(scan['Index Name'], scan['Index Cond'] ?? '', type));
        return;
      } else {
        reads.push({ other: type });
        return;
      }
    }
    for (const child of node.Plans ?? []) walk(child);
  };
  walk(root);
  return reads;
}

/** How the plan of `statement`, with its own parameters, reads the events. */
async function readsOf(db: Db, engine: Engine, statement: Statement): Promise<Read[]> {
  if (engine === 'sqlite') {
    const { rows } = await db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`EXPLAIN QUERY PLAN ${statement.sql}`, [...statement.parameters]),
    );
    return sqliteReads(rows.map((r) => r.detail));
  }
  const { rows } = await db.executeQuery<{ 'QUERY PLAN': Array<{ Plan: PgNode }> }>(
    CompiledQuery.raw(`EXPLAIN (FORMAT JSON) ${statement.sql}`, [...statement.parameters]),
  );
  const plan = rows[0]?.['QUERY PLAN'][0]?.Plan;
  if (plan === undefined) throw new Error('EXPLAIN returned no plan');
  return pgReads(plan);
}

/**
 * Every read of the tail seeks events_ingest_seq at the watermark (storage/tail.ts) and walks the
 * tail only, whatever the organisation's history: usage (the Usage page, the Overview's banner
 * and a capped plan's count in each track call), reports and exports, and the folding stage. The
 * test runs each path on a database with a history and a short tail, records the statements it
 * sends that read `ingest_seq >=`, and has each planned, with its parameters, by its engine: on
 * SQLite without statistics, as the service never runs ANALYZE; on PostgreSQL after ANALYZE of
 * the history (what autovacuum leaves), the tail coming after it.
 */
describe.each(ENGINES)('every read of the tail seeks the watermark (%s)', (engine) => {
  let h: Harness;
  let org: OrgCtx;
  let recorder: Recorder;
  let recorded: Db;

  /** The statements of `path` that read the tail, and how each one's plan reads the events. */
  async function tailPlans(
    path: () => Promise<unknown>,
  ): Promise<{ statements: number; sql: string[]; reads: Read[][] }> {
    recorder.takeTailReads();
    await path();
    const statements = recorder.takeTailReads();
    const reads: Read[][] = [];
    for (const statement of statements) reads.push(await readsOf(h.ctx.db as Db, engine, statement));
    return { statements: statements.length, sql: statements.map((s) => s.sql), reads };
  }

  /** Every read of the events in `reads` is a seek of the tail (or, with `windows`, of a window). */
  function expectTailSeeks(reads: Read[][], windows = false): void {
    for (const plan of reads) {
      expect(plan.filter((r) => r === 'tail').length, JSON.stringify(plan)).toBeGreaterThan(0);
      const allowed = plan.filter((r) => r === 'tail' || (windows && r === 'window'));
      expect(plan, JSON.stringify(plan)).toEqual(allowed);
    }
  }

  beforeAll(async () => {
    h = await createHarness(engine, { now: new Date(NOW).toISOString(), ...PAUSED });
    org = await h.orgCtx();
    const db = h.ctx.db as Db;
    // Folded history, as bulk rows (the planners see only the table): positions as tracking
    // gives them, below the watermark. PostgreSQL: transaction ids below the next one.
    const next =
      engine === 'postgres'
        ? Number(
            (
              await sql<{
                next: string;
              }>`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS next`.execute(db)
            ).rows[0]?.next,
          )
        : 1;
    const seq =
      engine === 'postgres'
        ? sql`(1 + i * ${sql.lit(next - 1)} / ${sql.lit(HISTORY)})::text::xid8`
        : sql`i + 1`;
    const at = sql`${sql.lit(NOW - 80 * DAY_MS)} + i * ${sql.lit(Math.floor((80 * DAY_MS) / HISTORY))}`;
    const orgOf = sql`CASE WHEN i % ${sql.lit(HISTORY_EVERY)} = 0 THEN ${org.org.id} ELSE 'org_crowd_' || (i % ${sql.lit(CROWD)}) END`;
    await sql`
      WITH RECURSIVE n(i) AS (SELECT CAST(0 AS bigint) UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ${sql.lit(HISTORY)})
      INSERT INTO events (id, org_id, agent_id, task_type, outcome, resolved_baseline_minutes,
        resolved_baseline_source, resolved_hourly_rate_micros, currency, hours_saved_micros,
        cost_saved_micros, resolved_cost_source, occurred_at, received_at, ingest_seq)
      SELECT 'evt_history_' || i, ${orgOf}, 'agent-' || (i % 20), 'support_ticket_reply', 'success', 10,
        'builtin', 50000000, 'EUR', 1000, 1000, 'provided', ${at}, ${at}, ${seq}
      FROM n`.execute(db);
    const watermark = engine === 'postgres' ? sql`${String(next)}::xid8` : sql`${HISTORY + 1}`;
    await sql`UPDATE fold_state SET watermark = ${watermark}`.execute(db);
    if (engine === 'postgres') {
      await sql`ALTER TABLE events SET (autovacuum_enabled = false)`.execute(db);
      await sql`ANALYZE events`.execute(db);
    }
    await createWebhook({
      ctx: org,
      input: { url: 'http://127.0.0.1:9/hook', event_types: ['event.created', 'agent.first_event'] },
    });
    recorder = new Recorder(db);
    recorded = db.withPlugin(recorder);
  });
  afterAll(async () => h.close());

  /** The tail: events tracked since, of the tested organisation and another one. */
  async function track(n: number): Promise<void> {
    const other = await h.orgCtx(await h.createOrg());
    for (let i = 0; i < n; i++) {
      await trackEvent({
        ctx: i % 3 === 2 ? other : org,
        idempotencyKey: null,
        input: { agent_id: `agent-${i % 4}`, task_type: 'support_ticket_reply', outcome: 'success' },
      });
    }
  }

  /**
   * PostgreSQL folds only below the oldest transaction running on the server, another test's or
   * benchmark's included: waits until the tail is below it, so that a pass folds it.
   */
  async function untilFoldable(): Promise<void> {
    if (engine !== 'postgres') return;
    for (let i = 0; i < 1200; i++) {
      const { rows } = await sql<{ foldable: boolean }>`
        SELECT pg_snapshot_xmin(pg_current_snapshot()) > (SELECT MAX(ingest_seq) FROM events) AS foldable`.execute(
        h.ctx.db,
      );
      if (rows[0]?.foldable) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('the tail did not become foldable');
  }

  const asOrg = (): OrgCtx => ({ ...org, db: recorded });
  const asService = (): ServiceCtx => ({ db: recorded, engine, clock: h.clock, config: h.config });
  const report = (groupBy: string, period: ReportInput['period']): ReportInput => ({
    period,
    groupBy: parseGroupBy(groupBy),
    sort: 'hours_saved',
    top: null,
    filters: { metadata: [] },
  });

  it('usage reads the tail from the watermark, in one statement', async () => {
    await track(TAIL);
    const { statements, reads } = await tailPlans(() => getUsage({ ctx: asOrg() }));
    expect(statements).toBe(1);
    expect(reads).toEqual([['tail']]);
  });

  it("a capped plan's count reads the tail from the watermark it reads itself", async () => {
    const month = usageMonth(new Date(NOW));
    const { statements, reads } = await tailPlans(() =>
      recorded.transaction().execute((trx) => admitCapped(trx, org.org.id, month, 1, 1_000_000)),
    );
    expect(statements).toBe(1);
    expect(reads).toEqual([['tail']]);
  });

  it("reports read the tail from the watermark, and the window's edges by time", async () => {
    for (const [groupBy, period] of [
      ['agent', '7d'],
      ['agent,task_type,client', '30d'],
      ['day', '90d'],
    ] as const) {
      const { statements, reads } = await tailPlans(() =>
        buildReport({ ctx: asOrg(), input: report(groupBy, period) }),
      );
      expect(statements).toBe(1);
      expectTailSeeks(reads, true);
      expect(reads[0]?.filter((r) => r === 'tail')).toEqual(['tail']);
    }
  });

  it('exports read the tail from the watermark the statement reads itself', async () => {
    const { statements, reads } = await tailPlans(async () => {
      for await (const row of streamReport({ ctx: asOrg(), input: report('agent,day', '30d') })) void row;
    });
    expect(statements).toBe(1);
    expectTailSeeks(reads, true);
    expect(reads[0]?.filter((r) => r === 'tail')).toEqual(['tail']);
  });

  it('/metrics and the ingest gate read the head and the length of the tail from the watermark', async () => {
    const meter = new TailMeter(recorded, engine, () => h.clock.now().getTime());
    const { statements, reads } = await tailPlans(async () => {
      await meter.read();
      await foldLag(recorded, engine, h.clock.now().getTime());
    });
    expect(statements).toBeGreaterThanOrEqual(3);
    expectTailSeeks(reads);
  });

  it("the folding stage reads its events from the watermark, and each organisation's for its messages", async () => {
    await track(TAIL);
    await untilFoldable();
    // A pass of the stage folded in SQL (as a backlog is), its messages read a chunk at a time.
    const inSql = await tailPlans(() =>
      foldBacklog(asService(), { limit: 100_000, sqlFrom: 1, messageChunk: MESSAGE_CHUNK }),
    );
    // The usual pass of a stage keeping up: its few events read into the service.
    await track(6);
    await untilFoldable();
    const few = await tailPlans(() => foldOnce(asService()));
    for (const { statements, reads } of [inSql, few]) {
      expect(statements).toBeGreaterThanOrEqual(4);
      expectTailSeeks(reads);
    }
    // The tested organisation's messages were read a chunk at a time, each from the last one's
    // position: those reads are among the ones checked.
    expect(inSql.sql.filter((s) => /\(ingest_seq, id\) >/.test(s)).length).toBeGreaterThanOrEqual(2);
  });
});
