/**
 * npm run bench:reports — seeds 1,000,000 events in one organisation (200 agents, 50 task types,
 * 20 clients, 90 days) on SQLite (a temp file) and PostgreSQL (TALLY_BENCH_POSTGRES_URL, default
 * postgres://postgres@127.0.0.1:5432/test, in a fresh schema dropped afterwards), then times
 * every report type over several group-bys and periods: p50/p95 of the report as served (rollups
 * + raw edges) next to the same report as a plain GROUP BY over raw events (their runs
 * interleaved), the floor of each report (its final rows read back from a plain table: what any
 * design that hands its rows over costs at least), and the peak memory of streaming a
 * ~100,000-row export. BENCH_EVENTS overrides the event count; BENCH_SHAPE=uniform
 * seeds agents, task types and clients independently and uniformly instead of agents that each
 * do a few task types of their own (see report-seed.ts). BENCH_KEEP=1 keeps the seeded database
 * (a SQLite file under the temp dir, a PostgreSQL schema bench_reports_keep_…) and reuses it on
 * the next run with the same shape and event count, migrated to the latest layout first: for
 * trying changes to the read path without seeding each time. BENCH_CASES=REGEX times only the
 * queries whose label matches (and skips the export and usage lines unless they match too).
 * BENCH_TAIL=N adds N events of the last 24 hours as tracking writes them, left unfolded: the
 * reports then read the rollups, plus a tail of N events (DESIGN §11); they are deleted at the end.
 * The usage line times GET /v1/reports/usage against a COUNT(*) of the organisation's events
 * (benchUsage).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { ManualClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import type { OrgCtx, ServiceCtx } from '../src/context.js';
import { getUsage } from '../src/billing/usage.js';
import { createOrganization, getOrganization } from '../src/orgs/organizations.js';
import { csvDocument } from '../src/reports/csv.js';
import { toMicros } from '../src/money.js';
import { GROUP_KEY, type ReportInput } from '../src/reports/params.js';
import { buildReport, streamReport, toReportRow, type ReportRow } from '../src/reports/report.js';
import { DAY_MS } from '../src/reports/rollups.js';
import {
  migrateToLatest,
  openStorage,
  selectArrays,
  type Db,
  type Engine,
  type Storage,
} from '../src/storage/db.js';
import { EVENTS_SCHEMA } from '../src/storage/events-file.js';
import { readFoldState } from '../src/storage/snapshot.js';
import { tailState } from '../src/fold/tail.js';
import { CASES, NOW, report } from './report-cases.js';
import { seedEvents, seedTail, type Shape } from './report-seed.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 20);
const RAW_RUNS = Number(process.env.BENCH_RAW_RUNS ?? 5);
const SHAPE = (process.env.BENCH_SHAPE ?? 'specialised') as Shape;
const KEEP = process.env.BENCH_KEEP === '1';
const TAIL = Number(process.env.BENCH_TAIL ?? 0);
const ONLY = process.env.BENCH_CASES ? new RegExp(process.env.BENCH_CASES) : null;
const selected = (label: string) => ONLY === null || ONLY.test(label);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

interface Timing {
  p50: number;
  p95: number;
}

async function sample(fn: () => Promise<unknown>, into: number[]): Promise<void> {
  const start = process.hrtime.bigint();
  await fn();
  into.push(Number(process.hrtime.bigint() - start) / 1e6);
}

function summary(samples: number[]): Timing {
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p95: percentile(samples, 95) };
}

async function time(runs: number, fn: () => Promise<unknown>): Promise<Timing> {
  await fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) await sample(fn, samples);
  return summary(samples);
}

/**
 * The served report, the plain GROUP BY and the floor, their runs interleaved (one plain run after
 * every few served ones), so that a slow spell of the machine weighs on every column alike.
 */
async function timeRuns(
  served: () => Promise<unknown>,
  raw: () => Promise<unknown>,
  floor: () => Promise<unknown>,
): Promise<{ served: Timing; raw: Timing; floor: Timing }> {
  await served();
  await raw();
  await floor();
  const servedSamples: number[] = [];
  const rawSamples: number[] = [];
  const floorSamples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    await sample(served, servedSamples);
    await sample(floor, floorSamples);
    if (rawSamples.length < Math.ceil(((i + 1) * RAW_RUNS) / RUNS)) await sample(raw, rawSamples);
  }
  return { served: summary(servedSamples), raw: summary(rawSamples), floor: summary(floorSamples) };
}

const FLOOR_TABLE = 'bench_report_floor';

/**
 * The floor of a report: its rows as the report's query returns them (group values, then the
 * micro-unit sums), already grouped and sorted, stored in a plain table; reading it is one scan
 * handing the rows over and turning them into report rows, as buildReport does. A design that
 * reads the same rows from the database can hardly be faster on this machine. Returns the reader.
 */
async function floorReader(db: Db, input: ReportInput, rows: readonly ReportRow[]) {
  const dims = input.groupBy;
  const columns = [...dims.map((_, i) => `g${i}`), 'events', 'h', 'c', 'a'];
  const types = [
    ...dims.map((d) => (d === 'day' || d === 'week' ? sql`bigint` : sql`text`)),
    ...[0, 1, 2, 3].map(() => sql`bigint`),
  ];
  await sql`DROP TABLE IF EXISTS ${sql.table(FLOOR_TABLE)}`.execute(db);
  await sql`CREATE TABLE ${sql.table(FLOOR_TABLE)} (${sql.join(
    columns.map((column, i) => sql`${sql.ref(column)} ${types[i]}`),
  )})`.execute(db);
  const values = rows.map((row) => [
    // Day and week buckets travel as epoch-day numbers (aggregate-sql.ts).
    ...dims.map((d) => {
      const value = row.group[GROUP_KEY[d]] ?? null;
      return value !== null && (d === 'day' || d === 'week')
        ? Date.parse(`${value}T00:00:00Z`) / DAY_MS
        : value;
    }),
    row.events,
    toMicros(row.hours_saved),
    toMicros(row.cost_saved),
    toMicros(row.agent_cost),
  ]);
  for (let i = 0; i < values.length; i += 1000) {
    const chunk = values.slice(i, i + 1000).map((v) => sql`(${sql.join(v)})`);
    await sql`INSERT INTO ${sql.table(FLOOR_TABLE)} VALUES ${sql.join(chunk)}`.execute(db);
  }
  const read =
    sql`SELECT ${sql.join(columns.map((column) => sql.ref(column)))} FROM ${sql.table(FLOOR_TABLE)}`.compile(
      db,
    );
  return async () => (await selectArrays(db, read)).map((row) => toReportRow(dims, row));
}

async function exportRows(ctx: OrgCtx, input: ReportInput): Promise<{ rows: number; bytes: number }> {
  let bytes = 0;
  let rows = -1;
  for await (const chunk of csvDocument(input.groupBy, streamReport({ ctx, input }))) {
    bytes += chunk.length;
    rows += chunk.split('\r\n').length - 1;
  }
  return { rows, bytes };
}

/** Peak RSS above the starting RSS while `fn` runs, sampled every 5 ms. */
async function peakRss(fn: () => Promise<unknown>): Promise<number> {
  globalThis.gc?.();
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 5);
  await fn();
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage.rss());
  return (peak - base) / 2 ** 20;
}

/**
 * VACUUM ANALYZE of the benchmark's own tables (its schema's on PostgreSQL), not the whole
 * database's: a bare VACUUM also works through every other schema of the database (other
 * benchmarks', tests', a developer's), and one bloated table there made it outlast the statement
 * timeout and end the run.
 */
async function vacuumAnalyze(db: Db, engine: Engine): Promise<void> {
  if (engine === 'sqlite') {
    await sql`ANALYZE`.execute(db);
    return;
  }
  const { rows } = await sql<{ name: string }>`
    SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1`.execute(db);
  const tables = rows.map((r) => sql.id(r.name));
  await sql`VACUUM ANALYZE ${sql.join(tables)}`.execute(db);
}

interface Opened {
  storage: Storage;
  /** Another connection to the same database (SQLite: a fresh one, which loads its statistics). */
  reopen: () => Storage;
  cleanup: () => Promise<void>;
}

async function open(engine: Engine): Promise<Opened> {
  const kept = `${SHAPE}_${EVENTS}`;
  if (engine === 'sqlite') {
    const dir = KEEP
      ? join(tmpdir(), `tally-bench-reports-keep-${kept}`)
      : mkdtempSync(join(tmpdir(), 'tally-bench-reports-'));
    const file = `sqlite:${join(dir, 'tally.db')}`;
    const storage = openStorage(file);
    await migrateToLatest(storage.db);
    const cleanup = async () =>
      KEEP ? console.log(`kept ${dir}`) : rmSync(dir, { recursive: true, force: true });
    return { storage, reopen: () => openStorage(file), cleanup };
  }
  const url = process.env.TALLY_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = KEEP ? `bench_reports_keep_${kept}` : `bench_reports_${process.pid}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(statement);
    await client.end();
  };
  await admin(
    KEEP
      ? `CREATE SCHEMA IF NOT EXISTS ${schema}`
      : `DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`,
  );
  const storage = openStorage(url, { schema, poolSize: 4 });
  await migrateToLatest(storage.db);
  const cleanup = async () =>
    KEEP ? console.log(`kept schema ${schema}`) : admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  return { storage, reopen: () => openStorage(url, { schema, poolSize: 4 }), cleanup };
}

/** The benchmark's organisation: the kept one (BENCH_KEEP) if it holds every event, else a new one. */
async function benchOrganization(ctx: ServiceCtx): Promise<{ id: string; seeded: boolean }> {
  const existing = await ctx.db
    .selectFrom('organizations')
    .select('id')
    .where('name', '=', 'Bench')
    .executeTakeFirst();
  if (existing !== undefined) {
    const events = await ctx.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('org_id', '=', existing.id)
      .executeTakeFirstOrThrow();
    const unnumbered = await ctx.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('ingest_seq', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(unnumbered.n) > 0) {
      throw new Error('the kept database was seeded before its events had positions (ingest_seq): delete it');
    }
    if (Number(events.n) !== EVENTS) {
      throw new Error(
        `the kept database holds ${events.n} events, not ${EVENTS} (a seed cut short?): delete it`,
      );
    }
    return { id: existing.id, seeded: true };
  }
  const created = await createOrganization({ ctx, input: { name: 'Bench', plan: 'enterprise' } });
  return { id: created.org.id, seeded: false };
}

const fmt = (ms: number) => ms.toFixed(1).padStart(8);
const ratio = (r: number) => r.toFixed(r < 1 ? 2 : 1);

/**
 * GET /v1/reports/usage (getUsage): the counts folded into usage_monthly plus the organisation's
 * tail. Next to it, interleaved: COUNT(*) of all the organisation's events (the reference: what a
 * read that walks the organisation's history costs at least) and COUNT(*) of the whole tail (what
 * reading only the tail costs at least). A usage read that seeks the tail from the watermark costs
 * about the second, whatever the organisation's history; one that walks the history costs more
 * than the first. Run with BENCH_TAIL for a tail.
 *
 * SQLite is timed as the service runs it: without statistics of the events file, which only the
 * benchmark's ANALYZE (vacuumAnalyze) wrote and the service never does. They are deleted, and read
 * on a fresh connection (a connection reads them once); the next run's ANALYZE writes them again.
 */
async function benchUsage(base: OrgCtx, reopen: () => Storage): Promise<void> {
  if (base.engine === 'sqlite') {
    for (const stat of ['sqlite_stat1', 'sqlite_stat4']) {
      const table = sql.table(`${EVENTS_SCHEMA}.${stat}`);
      const { rows } = await sql<{ n: number }>`
        SELECT COUNT(*) AS n FROM ${sql.table(`${EVENTS_SCHEMA}.sqlite_master`)} WHERE name = ${stat}`.execute(
        base.db,
      );
      if (Number(rows[0]?.n) > 0) await sql`DELETE FROM ${table} WHERE tbl = 'events'`.execute(base.db);
    }
  }
  const storage = reopen();
  try {
    const ctx: OrgCtx = { ...base, db: storage.db };
    const watermark = (await readFoldState(ctx.db)).watermark;
    const after = ctx.engine === 'postgres' ? sql`${String(watermark)}::xid8` : sql`${watermark}`;
    const history = sql`SELECT COUNT(*) AS n FROM events WHERE org_id = ${ctx.org.id}`;
    const tail = sql`SELECT COUNT(*) AS n FROM events WHERE ingest_seq >= ${after}`;
    const usage = await getUsage({ ctx });
    const timed = await timeRuns(
      () => getUsage({ ctx }),
      () => history.execute(ctx.db),
      () => tail.execute(ctx.db),
    );
    console.log(
      `\n| usage (${usage.lifetime_events.toLocaleString('en')} events, ${TAIL.toLocaleString('en')} in the tail) | p50 ms | p95 ms | COUNT(*) of the org's events p50 | p95 | ratio (p50) | COUNT(*) of the tail p50 | p95 |`,
    );
    console.log(`|---|---:|---:|---:|---:|---:|---:|---:|`);
    console.log(
      `| usage | ${fmt(timed.served.p50)} | ${fmt(timed.served.p95)} | ${fmt(timed.raw.p50)} | ${fmt(timed.raw.p95)} | ${ratio(timed.raw.p50 / timed.served.p50)}× | ${fmt(timed.floor.p50)} | ${fmt(timed.floor.p95)} |`,
    );
  } finally {
    await storage.close();
  }
}

/** Peak memory of streaming a large export, next to the same report built in memory. */
async function bigExport(ctx: OrgCtx, label: string): Promise<void> {
  const big = report('export', 'agent,task_type,client,week', '90d', 'hours_saved').input;
  let written = { rows: 0, bytes: 0 };
  const streamed = await peakRss(async () => {
    written = await exportRows(ctx, big);
  });
  const materialised = await peakRss(() => buildReport({ ctx, input: big }));
  console.log(
    `\n${label}: ${written.rows.toLocaleString('en')} rows, ${(written.bytes / 2 ** 20).toFixed(1)} MiB CSV; ` +
      `peak RSS +${streamed.toFixed(0)} MiB streamed (the same report built in memory: +${materialised.toFixed(0)} MiB)`,
  );
}

async function run(engine: Engine): Promise<void> {
  const { storage, reopen, cleanup } = await open(engine);
  let tailIds: string[] = [];
  try {
    const clock = new ManualClock(NOW);
    const base: ServiceCtx = {
      db: storage.db,
      storage,
      engine,
      clock,
      config: loadConfig({ TALLY_LOG_LEVEL: 'silent' }),
    };
    const bench = await benchOrganization(base);
    const ctx: OrgCtx = {
      ...base,
      org: await getOrganization({ ctx: base, id: bench.id }),
      actorKeyId: null,
    };

    const seedStart = Date.now();
    if (!bench.seeded) await seedEvents(storage.db, ctx.org.id, clock.now().getTime(), EVENTS, SHAPE);
    // After a bulk load PostgreSQL's autovacuum would vacuum and analyse (which also marks the
    // pages all-visible, for index-only scans); the benchmark does it at once.
    await vacuumAnalyze(storage.db, engine);
    tailIds = TAIL > 0 ? await seedTail(storage.db, ctx.org.id, clock.now().getTime(), TAIL) : [];
    const rollupRows = await storage.db
      .selectFrom('report_rollups')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    const pairs = await storage.db
      .selectFrom('report_rollups')
      .where('grain', '=', 'agent+task_type')
      .select(sql<number>`COUNT(DISTINCT agent_id || '/' || task_type)`.as('n'))
      .executeTakeFirstOrThrow();
    console.log(
      `\n## ${engine}: ${EVENTS.toLocaleString('en')} events (shape ${SHAPE}, ${Number(pairs.n).toLocaleString('en')} agent × task type pairs) ${bench.seeded ? 'kept from an earlier run' : `seeded in ${((Date.now() - seedStart) / 1000).toFixed(0)} s`}; ${Number(rollupRows.n).toLocaleString('en')} rollup rows${TAIL > 0 ? `; ${TAIL.toLocaleString('en')} events in the tail (${(await tailState(storage.db, engine)).events.toLocaleString('en')} counted)` : ''}`,
    );
    console.log(
      `| query | rows | p50 ms | p95 ms | plain GROUP BY p50 | p95 | ratio (p50) | floor p50 | p95 |`,
    );
    console.log(`|---|---:|---:|---:|---:|---:|---:|---:|---:|`);
    for (const c of CASES) {
      if (!selected(c.label)) continue;
      const answer = await buildReport({ ctx, input: c.input });
      const floor = await floorReader(storage.db, c.input, answer.rows);
      const timed = await timeRuns(
        () => buildReport({ ctx, input: c.input }),
        () => buildReport({ ctx, input: c.input, options: { forceRaw: true } }),
        floor,
      );
      const { served, raw } = timed;
      const ratio = raw.p50 / served.p50;
      console.log(
        `| ${c.label} | ${answer.rows.length} | ${fmt(served.p50)} | ${fmt(served.p95)} | ${fmt(raw.p50)} | ${fmt(raw.p95)} | ${ratio.toFixed(1)}× | ${fmt(timed.floor.p50)} | ${fmt(timed.floor.p95)} |`,
      );
    }
    await sql`DROP TABLE IF EXISTS ${sql.table(FLOOR_TABLE)}`.execute(storage.db);
    const exportLabel = 'export agent,day 30d (CSV, streamed)';
    if (selected(exportLabel)) {
      const exportInput = report('export', 'agent,day', '30d', 'hours_saved').input;
      const exported = await time(RUNS, () => exportRows(ctx, exportInput));
      console.log(`| ${exportLabel} | ${fmt(exported.p50)} | ${fmt(exported.p95)} | | | |`);
    }
    const bigLabel = 'export agent,task_type,client,week 90d';
    if (selected(bigLabel)) await bigExport(ctx, bigLabel);
    if (selected('usage')) await benchUsage(ctx, reopen);
  } finally {
    // The tail's events go, so that a kept database holds the seeded events only.
    for (let i = 0; i < tailIds.length; i += 1000) {
      await storage.db
        .deleteFrom('events')
        .where('id', 'in', tailIds.slice(i, i + 1000))
        .execute();
    }
    await storage.close();
    await cleanup();
  }
}

const engines: Engine[] = process.env.BENCH_ENGINES
  ? (process.env.BENCH_ENGINES.split(',') as Engine[])
  : ['sqlite', 'postgres'];
for (const engine of engines) await run(engine);
