import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { OrgCtx, ServiceCtx } from '../../src/context.js';
import { createOrganization, getOrganization } from '../../src/orgs/organizations.js';
import type { DbOrTrx } from '../../src/storage/db.js';
import { foldOnce, type FoldOptions } from '../../src/fold/pass.js';
import { tailState } from '../../src/fold/tail.js';
import { trackEvent } from '../../src/tracking/track.js';
import { recordFailedDelivery } from '../../src/webhooks/health.js';
import { commitPointOf, committedBefore } from '../../src/webhooks/subscribers.js';
import { recordSubscription } from '../../src/webhooks/subscription-versions.js';
import { createWebhook } from '../../src/webhooks/subscriptions.js';
import { createTestStorage, ENGINES } from '../support/engines.js';
import { createHarness, pausedStageOptions, type Harness, type TestOrg } from '../support/harness.js';
import { tempFile } from '../support/temp.js';
import { TEST_SECRET_KEY } from '../support/secret-key.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');

/**
 * When the folding stage writes an event's webhook messages (DESIGN §8 "Who receives what"):
 * - 'end': once, after every step, so that each event waits in the tail through every change
 *   made after its 201 (small passes: the events read into the service);
 * - 'end, large passes': the same in the passes that fold in SQL and read the events of the
 *   organisations with webhooks back a few at a time;
 * - 'each step': after each step, as if the stage had no lag. Every timing must give the same
 *   messages.
 */
const TIMINGS = [
  { name: 'end', eachStep: false, pass: {} },
  { name: 'end, large passes', eachStep: false, pass: { sqlFrom: 1, messageChunk: 2 } },
  { name: 'each step', eachStep: true, pass: {} },
] as const satisfies ReadonlyArray<{ name: string; eachStep: boolean; pass: FoldOptions }>;

describe.each(ENGINES)('a webhook receives the events committed while it is subscribed (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, pausedStageOptions(NOW));
  });
  afterAll(async () => h.close());

  /** Folds until the tail is empty (PostgreSQL folds below the oldest running transaction only). */
  async function foldEverything(pass: FoldOptions) {
    // By time, not passes: on a busy server another test's transaction may hold xmin back a while.
    for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
      const result = await foldOnce(h.ctx, pass);
      if (!result.more && (await tailState(h.ctx.db, h.ctx.engine)).events === 0) return;
      if (!result.more) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('the tail did not empty');
  }

  /** Tracks one event per agent of `agents`; returns their event ids in order. */
  async function track(org: TestOrg, agents: string[]): Promise<string[]> {
    const ids: string[] = [];
    for (const agent of agents) {
      const res = await h.request({
        method: 'POST',
        url: '/v1/track',
        apiKey: org.apiKey,
        payload: { agent_id: agent, task_type: 'support_ticket_reply', outcome: 'success' },
      });
      expect(res.statusCode, res.body).toBe(201);
      ids.push(res.json().event_id);
    }
    return ids;
  }

  async function subscribe(org: TestOrg, eventTypes: string[]): Promise<string> {
    const res = await h.request({
      method: 'POST',
      url: '/v1/webhooks',
      apiKey: org.apiKey,
      payload: { url: 'https://hooks.example.com/tally', event_types: eventTypes },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().id;
  }

  async function patch(org: TestOrg, id: string, payload: Record<string, unknown>) {
    const res = await h.request({ method: 'PATCH', url: `/v1/webhooks/${id}`, apiKey: org.apiKey, payload });
    expect(res.statusCode, res.body).toBe(200);
  }

  async function remove(org: TestOrg, id: string) {
    const res = await h.request({ method: 'DELETE', url: `/v1/webhooks/${id}`, apiKey: org.apiKey });
    expect(res.statusCode, res.body).toBe(204);
  }

  /** The 20th failed delivery in a row, as the delivery worker records it. */
  async function deactivate(id: string) {
    await h.ctx.db
      .updateTable('webhooks')
      .set({ status: 'failing', consecutive_failures: 19 })
      .where('id', '=', id)
      .execute();
    await h.ctx.db
      .transaction()
      .execute((trx) => recordFailedDelivery({ ...h.ctx, db: trx }, id, h.clock.now()));
  }

  /**
   * What a webhook was sent or will be: its deliveries not canceled, as `type event_id`, sorted.
   * A deleted webhook's pending deliveries are canceled, so it is sent nothing more.
   */
  async function received(webhookId: string): Promise<string[]> {
    const { rows } = await sql<{ type: string; payload: string }>`
      SELECT m.type, m.payload FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
      WHERE d.webhook_id = ${webhookId} AND d.status <> 'canceled'`.execute(h.ctx.db);
    return rows
      .map((r) => {
        const data = JSON.parse(r.payload) as { event_id?: string; event?: { event_id: string } };
        return `${r.type} ${data.event_id ?? data.event?.event_id}`;
      })
      .sort();
  }

  const created = (ids: string[]) => ids.map((id) => `event.created ${id}`);
  const firsts = (ids: string[]) => ids.map((id) => `agent.first_event ${id}`);
  const sorted = (items: string[]) => [...items].sort();

  it('keeps a closed version while events it holds wait, and drops it at the next change once they folded', async () => {
    const org = await h.createOrg({ plan: 'pro' });
    const hook = await subscribe(org, ['event.created']);
    const versions = async () =>
      (
        await h.ctx.db
          .selectFrom('webhook_subscription_versions')
          .select(['id', 'event_types', 'valid_to'])
          .where('webhook_id', '=', hook)
          .orderBy('id')
          .execute()
      ).map((v) => ({ id: Number(v.id), types: v.event_types, open: v.valid_to === null }));
    const waiting = await track(org, ['a']);
    await patch(org, hook, { event_types: ['agent.first_event'] });
    await patch(org, hook, { event_types: ['event.created', 'agent.first_event'] });
    const kept = await versions();
    expect(kept.map((v) => [v.types, v.open])).toEqual([
      ['["event.created"]', false],
      ['["agent.first_event"]', false],
      ['["event.created","agent.first_event"]', true],
    ]);
    await foldEverything({});
    // PostgreSQL: a transaction of another test still running may keep the watermark below
    // where the closed versions end; events of another organisation fold until it is past.
    const filler = await h.createOrg({ plan: 'pro' });
    const behind = engine === 'postgres' ? sql`pg_snapshot_xmax(valid_to)` : sql`valid_to + 1`;
    for (let i = 0; ; i++) {
      const { rows } = await sql<{ n: unknown }>`
        SELECT COUNT(*) AS n FROM webhook_subscription_versions
        WHERE webhook_id = ${hook} AND ${behind} > (SELECT watermark FROM fold_state WHERE id = 1)`.execute(
        h.ctx.db,
      );
      if (Number(rows[0]?.n) === 0) break;
      if (i > 200) throw new Error('the watermark did not pass the closed versions');
      await track(filler, ['filler']);
      await foldEverything({});
    }
    await patch(org, hook, { event_types: ['event.created'] });
    const left = await versions();
    // The versions closed before the fold hold nothing more to fold; the one closed now may
    // (PostgreSQL: its snapshot may end after the watermark), the open one does.
    expect(left.map((v) => v.id)).not.toContain(kept[0]?.id);
    expect(left.map((v) => v.id)).not.toContain(kept[1]?.id);
    expect(left.at(-1)).toMatchObject({ types: '["event.created"]', open: true });
    expect(await received(hook)).toEqual(created(waiting));
  });

  describe.each(TIMINGS)('folded at $name', ({ eachStep, pass }) => {
    /** Runs the steps in order, folding after each one or after the last. */
    async function run(steps: Array<() => Promise<unknown>>) {
      for (const step of steps) {
        await step();
        if (eachStep) await foldEverything(pass);
      }
      await foldEverything(pass);
    }

    it('a webhook created after 15 events were committed gets only the 5 tracked after it', async () => {
      const org = await h.createOrg({ plan: 'pro' });
      let before: string[] = [];
      let after: string[] = [];
      let hook = '';
      await run([
        async () =>
          (before = await track(
            org,
            [...'abcdeabcdeabcde'].map((c) => `early-${c}`),
          )),
        async () => (hook = await subscribe(org, ['event.created', 'agent.first_event'])),
        async () => (after = await track(org, ['early-a', 'late-x', 'early-b', 'late-x', 'late-y'])),
      ]);
      expect(await received(hook)).toEqual(
        sorted([...created(after), ...firsts([after[1], after[4]] as string[])]),
      );
      expect(before).toHaveLength(15);
    });

    it('a PATCH adding a type applies to the events committed after it', async () => {
      const org = await h.createOrg({ plan: 'pro' });
      const hook = await subscribe(org, ['agent.first_event']);
      let before: string[] = [];
      let after: string[] = [];
      await run([
        async () => (before = await track(org, ['a', 'b', 'a'])),
        () => patch(org, hook, { event_types: ['agent.first_event', 'event.created'] }),
        async () => (after = await track(org, ['a', 'c'])),
      ]);
      expect(await received(hook)).toEqual(
        sorted([...firsts([before[0], before[1], after[1]] as string[]), ...created(after)]),
      );
    });

    it('a PATCH dropping a type still sends it for the events committed before it', async () => {
      const org = await h.createOrg({ plan: 'pro' });
      const hook = await subscribe(org, ['event.created', 'agent.first_event']);
      let before: string[] = [];
      let after: string[] = [];
      await run([
        async () => (before = await track(org, ['a', 'b', 'a'])),
        () => patch(org, hook, { event_types: ['agent.first_event'] }),
        async () => (after = await track(org, ['a', 'c'])),
        // Back to both types: the events before and after the gap, not those inside it.
        () => patch(org, hook, { event_types: ['event.created', 'agent.first_event'], description: 'x' }),
        async () => (after = [...after, ...(await track(org, ['d']))]),
      ]);
      expect(await received(hook)).toEqual(
        sorted([
          ...created(before),
          ...created([after[2]] as string[]),
          ...firsts([before[0], before[1], after[1], after[2]] as string[]),
        ]),
      );
    });

    it('a webhook deleted while events wait is sent none of them; one created then only later ones', async () => {
      const org = await h.createOrg({ plan: 'pro' });
      const deleted = await subscribe(org, ['event.created']);
      const kept = await subscribe(org, ['event.created']);
      let before: string[] = [];
      let after: string[] = [];
      let replacement = '';
      await run([
        async () => (before = await track(org, ['a', 'b'])),
        () => remove(org, deleted),
        async () => (replacement = await subscribe(org, ['event.created'])),
        async () => (after = await track(org, ['a', 'c'])),
      ]);
      expect(await received(deleted)).toEqual([]);
      expect(await received(kept)).toEqual(sorted(created([...before, ...after])));
      expect(await received(replacement)).toEqual(sorted(created(after)));
    });

    it('a webhook deactivated while events wait keeps those committed before, and gets none until reactivated', async () => {
      const org = await h.createOrg({ plan: 'pro' });
      const hook = await subscribe(org, ['event.created']);
      let before: string[] = [];
      let after: string[] = [];
      await run([
        async () => (before = await track(org, ['a', 'b'])),
        () => deactivate(hook),
        () => track(org, ['a', 'c']),
        // A change of types while deactivated takes effect with the reactivation.
        () => patch(org, hook, { event_types: ['event.created', 'agent.first_event'] }),
        () => track(org, ['d']),
        () => patch(org, hook, { status: 'active' }),
        async () => (after = await track(org, ['a', 'e'])),
      ]);
      expect(await received(hook)).toEqual(
        sorted([...created([...before, ...after]), ...firsts([after[1]] as string[])]),
      );
    });
  });
});

describe('commit points', () => {
  it('on SQLite, a position holds the events numbered up to it', () => {
    fc.assert(
      fc.property(fc.nat(1_000), fc.nat(1_000), (position, seq) => {
        const point = commitPointOf(position, 'sqlite');
        expect(committedBefore(BigInt(seq), point)).toBe(seq <= position);
      }),
    );
  });
});

// PostgreSQL's snapshots and transactions that overlap: SQLite has one writer per file and a
// folding pass holds the main file's lock throughout, so neither arises there.
if (ENGINES.includes('postgres'))
  describe('a webhook change and an event that overlap (postgres)', () => {
    let h: Harness;
    beforeAll(async () => {
      h = await createHarness('postgres', pausedStageOptions(NOW));
    });
    afterAll(async () => h.close());

    it('reads a snapshot as pg_visible_in_snapshot does', async () => {
      const snapshot = fc
        .record({
          // Transaction ids of the first epoch and of a later one (xid8 counts the wraparounds).
          base: fc.constantFrom(3n, (1n << 33n) + 3n),
          xmin: fc.nat(1_000),
          width: fc.nat(40),
          running: fc.array(fc.nat(39), { maxLength: 10 }),
          seqs: fc.array(fc.integer({ min: -5, max: 45 }), { minLength: 1, maxLength: 20 }),
        })
        .map(({ base, xmin, width, running, seqs }) => {
          const low = base + BigInt(xmin);
          const xip = [...new Set(running.filter((r) => r < width))].sort((a, b) => a - b);
          return {
            text: `${low}:${low + BigInt(width)}:${xip.map((r) => low + BigInt(r)).join(',')}`,
            seqs: seqs.map((s) => low + BigInt(s)).filter((s) => s > 0n),
          };
        });
      await fc.assert(
        fc.asyncProperty(snapshot, async ({ text, seqs }) => {
          const { rows } = await sql<{ seq: string; visible: boolean }>`
            SELECT seq, pg_visible_in_snapshot(seq::xid8, ${text}::pg_snapshot) AS visible
            FROM unnest(${seqs.map(String)}::text[]) AS seq`.execute(h.ctx.db);
          const point = commitPointOf(text, 'postgres');
          for (const row of rows) expect(committedBefore(BigInt(row.seq), point), row.seq).toBe(row.visible);
        }),
        { numRuns: 100 },
      );
    });

    async function setUp() {
      const org = await h.createOrg({ plan: 'pro' });
      const ctx = await h.orgCtx(org);
      const res = await h.request({
        method: 'POST',
        url: '/v1/webhooks',
        apiKey: org.apiKey,
        payload: { url: 'https://hooks.example.com/tally', event_types: ['event.created'] },
      });
      expect(res.statusCode, res.body).toBe(201);
      const hook: string = res.json().id;
      /** The change: `event.created` → `agent.first_event`, as a PATCH writes it, in `trx`. */
      const change = async (trx: DbOrTrx) => {
        await trx
          .updateTable('webhooks')
          .set({ event_types: JSON.stringify(['agent.first_event']) })
          .where('id', '=', hook)
          .execute();
        await recordSubscription(trx, 'postgres', {
          webhookId: hook,
          orgId: org.id,
          eventTypes: ['agent.first_event'],
        });
      };
      const trackIn = (db: DbOrTrx) =>
        trackEvent({
          ctx: { ...ctx, db },
          idempotencyKey: null,
          input: { agent_id: 'new-agent', task_type: 'support_ticket_reply', outcome: 'success' },
        });
      /** The messages the webhook gets: one per event, by the old or the new subscription. */
      const types = async () => {
        const { rows } = await sql<{ type: string }>`
          SELECT m.type FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
          WHERE d.webhook_id = ${hook}`.execute(h.ctx.db);
        return rows.map((r) => r.type);
      };
      return { change, trackIn, types };
    }

    async function foldEverything() {
      for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
        const result = await foldOnce(h.ctx);
        if (!result.more && (await tailState(h.ctx.db, h.ctx.engine)).events === 0) return;
        if (!result.more) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error('the tail did not empty');
    }

    it('an event still committing when the change commits goes by the new subscription', async () => {
      const { change, trackIn, types } = await setUp();
      await h.ctx.db.transaction().execute(async (trx) => {
        await trackIn(trx);
        await h.ctx.db.transaction().execute(change);
      });
      await foldEverything();
      expect(await types()).toEqual(['agent.first_event']);
    });

    it('an event committed while the change runs, after its snapshot, waits for it and goes by the new one', async () => {
      const { change, trackIn, types } = await setUp();
      await h.ctx.db.transaction().execute(async (trx) => {
        await change(trx);
        await trackIn(h.ctx.db);
        // The change's transaction id is below the event's: the event cannot fold before it ends.
        await foldOnce(h.ctx);
        expect((await tailState(h.ctx.db, h.ctx.engine)).events).toBe(1);
      });
      await foldEverything();
      expect(await types()).toEqual(['agent.first_event']);
    });

    it('an event begun before the change and folded before it commits goes by the old one (either is allowed)', async () => {
      const { change, trackIn, types } = await setUp();
      let commitEvent = () => undefined as void;
      let tracked = () => undefined as void;
      const started = new Promise<void>((resolve) => (tracked = resolve));
      const event = h.ctx.db.transaction().execute(async (trx) => {
        await trackIn(trx);
        tracked();
        await new Promise<void>((resolve) => (commitEvent = resolve));
      });
      await started;
      await h.ctx.db.transaction().execute(async (trx) => {
        await change(trx);
        commitEvent();
        await event;
        await foldEverything();
      });
      await foldEverything();
      expect(await types()).toEqual(['event.created']);
    });
  });

/**
 * A SQLite file, as served: track batches commit to the events file on a connection of their
 * own while a folding pass holds the main file (storage/events-file.ts).
 */
describe('a webhook change between two passes of a SQLite file', () => {
  it('events committed during a pass and folded after a webhook was created are not sent to it', async () => {
    const storage = await createTestStorage('sqlite', { file: tempFile('tally-commit-order-', 'two.db') });
    try {
      const config = loadConfig({ TALLY_LOG_LEVEL: 'silent', TALLY_SECRET_KEY: TEST_SECRET_KEY });
      const ctx: ServiceCtx = {
        db: storage.db,
        storage,
        engine: 'sqlite',
        clock: new ManualClock(new Date(NOW)),
        config,
      };
      const made = await createOrganization({ ctx, input: { name: 'Two files', plan: 'pro' } });
      const org: OrgCtx = { ...ctx, org: await getOrganization({ ctx, id: made.org.id }), actorKeyId: null };
      const track = async (agent: string) =>
        (
          await trackEvent({
            ctx: org,
            idempotencyKey: null,
            input: { agent_id: agent, task_type: 'support_ticket_reply', outcome: 'success' },
          })
        ).event.event_id;
      await track('a');
      let during: string[] = [];
      const pass = await foldOnce(ctx, {
        beforeCommit: async () => {
          during = await Promise.all(['b', 'c'].map(track));
        },
      });
      expect(pass.folded).toBe(1);
      const hook = await createWebhook({
        ctx: org,
        input: {
          url: 'https://hooks.example.com/tally',
          event_types: ['event.created', 'agent.first_event'],
        },
      });
      const after = await track('d');
      expect((await foldOnce(ctx)).folded).toBe(3);
      const { rows } = await sql<{ type: string; payload: string }>`
        SELECT m.type, m.payload FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
        WHERE d.webhook_id = ${hook.id}`.execute(storage.db);
      const sent = rows.map((r) => {
        const data = JSON.parse(r.payload) as { event_id?: string; event?: { event_id: string } };
        return `${r.type} ${data.event_id ?? data.event?.event_id}`;
      });
      expect(during).toHaveLength(2);
      expect(sent.sort()).toEqual([`agent.first_event ${after}`, `event.created ${after}`]);
    } finally {
      await storage.destroy();
    }
  });
});
