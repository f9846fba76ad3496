import { sql } from 'kysely';
import { seqRange } from '../fold/rollups.js';
import type { DbOrTrx, Engine } from '../storage/db.js';
import type { IngestSeq } from '../storage/snapshot.js';
import type { MessageType } from './event-types.js';

/**
 * A position in the event log's commit order (subscription-versions.ts), as a snapshot: the
 * events committed before it are those below `xmin`, and those below `xmax` not `running`.
 * A SQLite position p (the largest `ingest_seq` seen) is the snapshot p+1:p+1:.
 */
export interface CommitPoint {
  xmin: bigint;
  xmax: bigint;
  running: ReadonlySet<bigint>;
}

/** A stored position: `xmin:xmax:xip,…` (pg_snapshot as text) or a SQLite `ingest_seq`. */
export function commitPointOf(value: string | number, engine: Engine): CommitPoint {
  if (engine === 'sqlite') {
    const next = BigInt(value) + 1n;
    return { xmin: next, xmax: next, running: new Set() };
  }
  const [xmin, xmax, xip] = String(value).split(':');
  if (xmin === undefined || xmax === undefined) throw new Error(`not a snapshot: ${value}`);
  return {
    xmin: BigInt(xmin),
    xmax: BigInt(xmax),
    running: new Set(xip ? xip.split(',').map((x) => BigInt(x)) : []),
  };
}

/** Whether the event at `seq` had committed at `point` (PostgreSQL's pg_visible_in_snapshot). */
export function committedBefore(seq: bigint, point: CommitPoint): boolean {
  return seq < point.xmin || (seq < point.xmax && !point.running.has(seq));
}

interface Version {
  webhookId: string;
  types: ReadonlySet<string>;
  from: CommitPoint | null;
  to: CommitPoint | null;
}

/**
 * Who receives the events of one folding pass, `from <= ingest_seq < to`: the webhooks whose
 * subscription version holds each event (committed after its start, not after its end). Most
 * versions hold the whole range and are looked up by organisation and type; only those that
 * start or end inside it are checked event by event.
 */
export class Subscribers {
  /** The organisations with a version that may hold events of the range. */
  readonly orgs = new Set<string>();
  private readonly whole = new Map<string, string[]>();
  private readonly partial = new Map<string, Version[]>();

  constructor(versions: ReadonlyArray<{ orgId: string } & Version>, from: IngestSeq, to: IngestSeq) {
    const first = BigInt(from);
    const end = BigInt(to);
    for (const { orgId, ...version } of versions) {
      this.orgs.add(orgId);
      const all =
        (version.from === null || version.from.xmax <= first) &&
        (version.to === null || version.to.xmin >= end);
      if (!all) {
        this.partial.set(orgId, [...(this.partial.get(orgId) ?? []), version]);
        continue;
      }
      for (const type of version.types) {
        const key = `${orgId} ${type}`;
        this.whole.set(key, [...(this.whole.get(key) ?? []), version.webhookId]);
      }
    }
  }

  /** The webhooks that receive `type` for the event of organisation `orgId` at `seq`. */
  webhooksFor(orgId: string, type: MessageType, seq: IngestSeq | null): readonly string[] {
    const whole = this.whole.get(`${orgId} ${type}`) ?? [];
    const partial = this.partial.get(orgId);
    if (partial === undefined || seq === null) return whole;
    const at = BigInt(seq);
    const held = partial.filter(
      (v) =>
        v.types.has(type) &&
        (v.from === null || !committedBefore(at, v.from)) &&
        (v.to === null || committedBefore(at, v.to)),
    );
    return held.length === 0 ? whole : [...whole, ...held.map((v) => v.webhookId)];
  }
}

/**
 * The subscription versions that may hold events of `from <= ingest_seq < to`, of the
 * organisations with events there (one indexed query, and nothing more, when none has a
 * webhook): open ones, and closed ones that end after `from`. Null when there are none.
 */
export async function readSubscribers(
  db: DbOrTrx,
  engine: Engine,
  from: IngestSeq,
  to: IngestSeq,
): Promise<Subscribers | null> {
  const postgres = engine === 'postgres';
  const { rows } = await sql<{
    org_id: string;
    webhook_id: string;
    event_types: string;
    valid_from: string | number | null;
    valid_to: string | number | null;
  }>`
    SELECT org_id, webhook_id, event_types,
      ${postgres ? sql`valid_from::text AS valid_from, valid_to::text AS valid_to` : sql`valid_from, valid_to`}
    FROM webhook_subscription_versions
    WHERE (valid_to IS NULL OR ${postgres ? sql`pg_snapshot_xmax(valid_to) > ${String(from)}::xid8` : sql`valid_to >= ${from}`})
      AND org_id IN (SELECT DISTINCT org_id FROM events WHERE ${seqRange(engine, from, to)})`.execute(db);
  if (rows.length === 0) return null;
  const point = (value: string | number | null) => (value === null ? null : commitPointOf(value, engine));
  const versions = rows.map((row) => ({
    orgId: row.org_id,
    webhookId: row.webhook_id,
    types: new Set(JSON.parse(row.event_types) as string[]),
    from: point(row.valid_from),
    to: point(row.valid_to),
  }));
  return new Subscribers(versions, from, to);
}
