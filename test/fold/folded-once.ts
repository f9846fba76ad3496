import { expect } from 'vitest';
import type { DbOrTrx, Engine } from '../../src/storage/db.js';
import { tailState } from '../../src/fold/tail.js';
import { derived, rollupsAndEvents } from './derived.js';

function tally(values: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
}

/**
 * The only organisation's events are all folded, each exactly once: the rollups (the `all` and
 * `agent` day rows against a plain GROUP BY over the events), usage, one `event.created` message
 * per event and one `agent.first_event` per agent (for the event recorded as its first), each
 * with one delivery. Returns the stored event ids and the webhook messages.
 */
export async function expectFoldedOnce(db: DbOrTrx, engine: Engine, agents: readonly string[]) {
  expect((await tailState(db, engine)).events).toBe(0);
  const org = await db.selectFrom('organizations').select('id').executeTakeFirstOrThrow();
  const stored = await db.selectFrom('events').select('id').where('org_id', '=', org.id).execute();
  const events = new Set(stored.map((e) => e.id));
  const total = events.size;
  expect(await derived(db, org.id)).toEqual({
    rolledUp: total,
    rolledUpMonths: total,
    usage: total,
    created: total,
    createdEvents: total,
    firsts: agents.length,
  });
  for (const grain of ['all', 'agent'] as const) {
    const { rollups, events: grouped } = await rollupsAndEvents(db, org.id, grain);
    expect(rollups, grain).toEqual(grouped);
  }

  const messages = await db
    .selectFrom('webhook_messages')
    .select(['id', 'type', 'payload'])
    .where('org_id', '=', org.id)
    .execute();
  const created = messages.filter((m) => m.type === 'event.created');
  const perEvent = tally(created.map((m) => (JSON.parse(m.payload) as { event_id: string }).event_id));
  expect(perEvent.size).toBe(total);
  expect([...perEvent].filter(([id, n]) => n !== 1 || !events.has(id))).toEqual([]);
  const firsts = messages
    .filter((m) => m.type === 'agent.first_event')
    .map((m) => JSON.parse(m.payload) as { agent_id: string; event: { event_id: string } });
  const recorded = await db
    .selectFrom('agents')
    .select(['agent_id', 'first_event_id'])
    .where('org_id', '=', org.id)
    .execute();
  expect(recorded.map((r) => r.agent_id).sort()).toEqual([...agents].sort());
  expect(firsts.map((p) => [p.agent_id, p.event.event_id]).sort()).toEqual(
    recorded.map((r) => [r.agent_id, r.first_event_id]).sort(),
  );

  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .select('message_id')
    .where('org_id', '=', org.id)
    .execute();
  expect(tally(deliveries.map((d) => d.message_id))).toEqual(new Map(messages.map((m) => [m.id, 1])));
  return { events, messages };
}
