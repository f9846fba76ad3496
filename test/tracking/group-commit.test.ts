import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';

const VALID = { agent_id: 'steady-bot', task_type: 'sales_crm_update', outcome: 'success' };
const POISON = { ...VALID, agent_id: 'poison-bot' };

/**
 * Issue 12 §3: group commit puts several requests' events into one transaction. An event the
 * database refuses (here: a trigger refusing agent `poison-bot`, standing for any rejection that
 * passes validation) must fail alone, never the other organisation's events committed with it.
 */
describe.each(ENGINES)('group commit isolates an event the database refuses (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { plan: 'enterprise' });
    if (engine === 'sqlite') {
      // In the events file, which holds the events (storage/events-file.ts).
      await sql`CREATE TRIGGER ingest.poison BEFORE INSERT ON events WHEN NEW.agent_id = 'poison-bot'
        BEGIN SELECT RAISE(ABORT, 'poisoned event'); END`.execute(h.storage.db);
    } else {
      await sql`CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.agent_id = 'poison-bot' THEN RAISE EXCEPTION 'poisoned event'; END IF; RETURN NEW; END $$`.execute(
        h.storage.db,
      );
      await sql`CREATE TRIGGER poison BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION poison()`.execute(
        h.storage.db,
      );
    }
  });
  afterAll(async () => h.close());

  async function storedOf(orgId: string): Promise<number> {
    const row = await h.storage.db
      .selectFrom('events')
      .select(sql<number>`count(*)`.as('n'))
      .where('org_id', '=', orgId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  it('answers every valid track of organisation B with 201 while A streams refused events', async () => {
    const a = await h.createOrg({ plan: 'enterprise' });
    const b = await h.createOrg({ plan: 'enterprise' });
    const statusesOfB: number[] = [];
    const statusesOfA: number[] = [];
    for (let round = 0; round < 5; round++) {
      h.clock.advance(1000);
      const requests = Array.from({ length: 60 }, (_, i) => {
        const fromA = i % 3 === 0;
        return h
          .request({
            method: 'POST',
            url: '/v1/track',
            apiKey: fromA ? a.apiKey : b.apiKey,
            payload: fromA ? POISON : VALID,
          })
          .then((res) => (fromA ? statusesOfA : statusesOfB).push(res.statusCode));
      });
      await Promise.all(requests);
    }
    expect(statusesOfB).toEqual(Array(200).fill(201));
    expect(new Set(statusesOfA)).toEqual(new Set([500]));
    expect(await storedOf(b.id)).toBe(200);
    expect(await storedOf(a.id)).toBe(0);
  });

  it('fails only the refused events of a batch, and other requests sharing its transaction', async () => {
    const a = await h.createOrg({ plan: 'enterprise' });
    const b = await h.createOrg({ plan: 'enterprise' });
    h.clock.advance(1000);
    const [batchA, ...tracksB] = await Promise.all([
      h.request({
        method: 'POST',
        url: '/v1/track/batch',
        apiKey: a.apiKey,
        payload: { events: [VALID, POISON, VALID, POISON, VALID] },
      }),
      ...Array.from({ length: 20 }, () =>
        h.request({ method: 'POST', url: '/v1/track', apiKey: b.apiKey, payload: VALID }),
      ),
    ]);
    expect(batchA?.statusCode).toBe(207);
    const data = batchA?.json().data as Array<{ status: number; error?: { code: string } }>;
    expect(data.map((d) => d.status)).toEqual([201, 500, 201, 500, 201]);
    expect(data[1]?.error?.code).toBe('internal_error');
    expect(tracksB.map((r) => r.statusCode)).toEqual(Array(20).fill(201));
    expect(await storedOf(a.id)).toBe(3);
    expect(await storedOf(b.id)).toBe(20);
    // The service is healthy afterwards.
    expect((await h.request({ method: 'GET', url: '/readyz', apiKey: null })).statusCode).toBe(200);
  });

  // The batcher remembers the agents it committed and stops inserting them (event-writes.ts):
  // an agent whose first event went down with a refused one must not be remembered.
  it("records an agent whose first event's transaction was rolled back with a refused event", async () => {
    const c = await h.createOrg({ plan: 'enterprise' });
    h.clock.advance(1000);
    const [first, refused] = await Promise.all([
      h.request({
        method: 'POST',
        url: '/v1/track',
        apiKey: c.apiKey,
        payload: { ...VALID, agent_id: 'fresh-bot' },
      }),
      h.request({ method: 'POST', url: '/v1/track', apiKey: c.apiKey, payload: POISON }),
    ]);
    expect([first?.statusCode, refused?.statusCode]).toEqual([201, 500]);
    const second = await h.request({
      method: 'POST',
      url: '/v1/track',
      apiKey: c.apiKey,
      payload: { ...VALID, agent_id: 'fresh-bot' },
    });
    expect(second.statusCode).toBe(201);
    const agents = await h.storage.db
      .selectFrom('agents')
      .select(['agent_id', 'first_event_id'])
      .where('org_id', '=', c.id)
      .execute();
    expect(agents).toEqual([{ agent_id: 'fresh-bot', first_event_id: first?.json().event_id }]);
  });
});
