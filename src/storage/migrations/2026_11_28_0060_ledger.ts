import { SqliteAdapter, sql, type Kysely } from 'kysely';

/**
 * The adjustments ledger (docs/architecture.md "The adjustments ledger", docs/figures.md).
 *
 * - `adjustments`: signed deltas of an event's figures, each caused by a review or a
 *   restatement, with the event's dimensions copied so that the folding stage folds them without
 *   a join. In the main file on SQLite, numbered by the writing transaction after the largest
 *   `ingest_seq` stored (one writer at a time); on PostgreSQL `ingest_seq` is the writing
 *   transaction's id, as for events. Folded behind `fold_state.adjust_watermark`, a watermark of
 *   their own per fold part.
 * - `reviews`: every review of an event, the latest being the one in force.
 * - `restatements` and `restatement_staging`: a restatement's record and the entries it stages
 *   before it publishes them in one transaction.
 * - `report_rollups` gains the sums of review hours and review cost, over all events and per
 *   outcome (numeric on PostgreSQL, as the other micro-unit sums: migration 0011).
 */
const OUTCOMES = ['success', 'needs_review', 'failure'];
const NEW_SUMS = ['review_hours_micros', 'review_cost_micros'];
const ROLLUP_COLUMNS = ['', ...OUTCOMES.map((o) => `${o}_`)].flatMap((prefix) =>
  NEW_SUMS.map((column) => `${prefix}${column}`),
);

export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  const seqType = sqlite ? sql`integer` : sql`xid8`;
  const seqDefault = sqlite ? sql`` : sql`DEFAULT pg_current_xact_id()`;
  await sql`
    CREATE TABLE adjustments (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      event_id text NOT NULL,
      cause text NOT NULL,
      cause_id text NOT NULL,
      agent_id text NOT NULL,
      task_type text NOT NULL,
      outcome text NOT NULL,
      client_id text,
      occurred_at bigint NOT NULL,
      hours_saved_micros bigint NOT NULL,
      cost_saved_micros bigint NOT NULL,
      agent_cost_micros bigint NOT NULL,
      review_hours_micros bigint NOT NULL,
      review_cost_micros bigint NOT NULL,
      baseline_minutes double precision,
      hourly_rate_micros bigint,
      created_at bigint NOT NULL,
      ingest_seq ${seqType} NOT NULL ${seqDefault}
    )`.execute(db);
  await sql`CREATE INDEX adjustments_org_event ON adjustments (org_id, event_id, ingest_seq)`.execute(db);
  await sql`CREATE INDEX adjustments_org_occurred ON adjustments (org_id, occurred_at)`.execute(db);
  await sql`CREATE INDEX adjustments_org_seq ON adjustments (org_id, ingest_seq)`.execute(db);
  await sql`CREATE INDEX adjustments_seq ON adjustments (ingest_seq)`.execute(db);

  await sql`ALTER TABLE fold_state ADD COLUMN adjust_watermark ${seqType} NOT NULL DEFAULT ${sqlite ? sql`0` : sql`'0'::xid8`}`.execute(
    db,
  );

  await sql`
    CREATE TABLE reviews (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      event_id text NOT NULL,
      number integer NOT NULL,
      review_minutes double precision NOT NULL,
      verdict text NOT NULL,
      reviewer text,
      note text,
      idempotency_key text,
      actor_key_id text,
      hours_saved_micros bigint NOT NULL,
      cost_saved_micros bigint NOT NULL,
      review_hours_micros bigint NOT NULL,
      review_cost_micros bigint NOT NULL,
      created_at bigint NOT NULL
    )`.execute(db);
  await sql`CREATE UNIQUE INDEX reviews_org_event ON reviews (org_id, event_id, number)`.execute(db);
  await sql`CREATE UNIQUE INDEX reviews_idempotency ON reviews (org_id, idempotency_key)`.execute(db);

  await sql`
    CREATE TABLE restatements (
      id text PRIMARY KEY,
      org_id text NOT NULL,
      reason text NOT NULL,
      status text NOT NULL,
      events_seen bigint NOT NULL,
      events_adjusted bigint NOT NULL,
      cursor text,
      created_at bigint NOT NULL,
      applied_at bigint
    )`.execute(db);
  await sql`CREATE INDEX restatements_org ON restatements (org_id, id)`.execute(db);
  await sql`
    CREATE TABLE restatement_staging (
      restatement_id text NOT NULL,
      event_id text NOT NULL,
      org_id text NOT NULL,
      agent_id text NOT NULL,
      task_type text NOT NULL,
      outcome text NOT NULL,
      client_id text,
      occurred_at bigint NOT NULL,
      hours_saved_micros bigint NOT NULL,
      cost_saved_micros bigint NOT NULL,
      agent_cost_micros bigint NOT NULL,
      review_hours_micros bigint NOT NULL,
      review_cost_micros bigint NOT NULL,
      baseline_minutes double precision,
      hourly_rate_micros bigint,
      based_on bigint NOT NULL,
      PRIMARY KEY (restatement_id, event_id)
    )`.execute(db);

  const type = sqlite ? 'integer' : 'numeric';
  for (const column of ROLLUP_COLUMNS)
    await sql`ALTER TABLE report_rollups ADD COLUMN ${sql.raw(column)} ${sql.raw(type)} NOT NULL DEFAULT 0`.execute(
      db,
    );
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ROLLUP_COLUMNS)
    await sql`ALTER TABLE report_rollups DROP COLUMN ${sql.raw(column)}`.execute(db);
  await sql`DROP TABLE restatement_staging`.execute(db);
  await sql`DROP TABLE restatements`.execute(db);
  await sql`DROP TABLE reviews`.execute(db);
  await sql`ALTER TABLE fold_state DROP COLUMN adjust_watermark`.execute(db);
  await sql`DROP TABLE adjustments`.execute(db);
}
