import { sql, type RawBuilder } from 'kysely';
import type { ServiceCtx } from '../context.js';
import type { DbOrTrx } from '../storage/db.js';
import type { EventRow } from '../storage/schema.js';
import { orgEventsBySeq } from '../storage/tail.js';
import { eventView } from '../tracking/events.js';
import { enqueueNewEventMessages, type NewEventMessage } from '../webhooks/outbox.js';
import { readSubscribers } from '../webhooks/subscribers.js';
import { seqRange } from './rollups.js';
import type { Seq } from './seq.js';

/** The events a pass reads into the service at a time to write their webhook messages. */
export const MESSAGE_CHUNK = 5_000;

/** The ids of the events in `rows` that are the first of their agent (tracking records them). */
async function firstEventIds(trx: DbOrTrx, rows: readonly EventRow[]): Promise<Set<string>> {
  const byOrg = new Map<string, Set<string>>();
  for (const row of rows) {
    const agents = byOrg.get(row.org_id) ?? new Set<string>();
    agents.add(row.agent_id);
    byOrg.set(row.org_id, agents);
  }
  const firsts = new Set<string>();
  for (const [orgId, agents] of byOrg) {
    const ids = [...agents];
    for (let i = 0; i < ids.length; i += 500) {
      const found = await trx
        .selectFrom('agents')
        .select('first_event_id')
        .where('org_id', '=', orgId)
        .where('agent_id', 'in', ids.slice(i, i + 500))
        .execute();
      for (const f of found) firsts.add(f.first_event_id);
    }
  }
  return firsts;
}

/**
 * The webhook messages of the events of a range, for the organisations with a webhook
 * subscribed when some of them were committed (webhooks/subscribers.ts): only their events are
 * read back (or taken from `read`, the pass's events when it read them).
 */
export async function writeMessages(
  trx: DbOrTrx,
  ctx: ServiceCtx,
  from: Seq,
  to: Seq,
  read?: readonly EventRow[],
  chunk = MESSAGE_CHUNK,
): Promise<void> {
  const subscribers = await readSubscribers(trx, ctx.engine, from, to);
  if (subscribers === null) return;
  const enqueue = async (rows: readonly EventRow[]) => {
    const firsts = await firstEventIds(trx, rows);
    const messages: NewEventMessage[] = rows.map((row) => ({
      orgId: row.org_id,
      event: eventView(row),
      seq: row.ingest_seq,
      isNewAgent: firsts.has(row.id),
    }));
    await enqueueNewEventMessages(trx, messages, ctx.config.webhookRetryDelaysSeconds[0] ?? 0, subscribers);
  };
  if (read) {
    await enqueue(read.filter((r) => subscribers.orgs.has(r.org_id)));
    return;
  }
  // A pass of a backlog holds up to FOLD_BATCH events: they are read `chunk` at a time, in
  // commit order, so that the service never holds more of them. Each read seeks from the last
  // one's position (storage/tail.ts).
  const seq = (value: unknown) => (ctx.engine === 'postgres' ? sql`${String(value)}::xid8` : sql`${value}`);
  for (const orgId of subscribers.orgs) {
    let after: { ingest_seq: Seq; id: string } | null = null;
    for (;;) {
      const range: RawBuilder<unknown> =
        after === null
          ? seqRange(ctx.engine, from, to)
          : sql`${seqRange(ctx.engine, after.ingest_seq, to)} AND (ingest_seq, id) > (${seq(after.ingest_seq)}, ${after.id})`;
      const { rows } = await sql<EventRow>`
        SELECT * FROM ${orgEventsBySeq(ctx.engine, orgId, range)} ORDER BY ingest_seq, id LIMIT ${chunk}`.execute(
        trx,
      );
      await enqueue(rows);
      const last = rows.at(-1);
      if (last === undefined || rows.length < chunk) break;
      after = { ingest_seq: last.ingest_seq as Seq, id: last.id };
    }
  }
}
