import { spawn } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/accounts/authorize.js';
import { checkChange } from '../../src/assumptions/change-input.js';
import { previewChange } from '../../src/assumptions/preview.js';
import { finishRestatements, restate } from '../../src/assumptions/restatements.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { OrgCtx } from '../../src/context.js';
import { AppError } from '../../src/errors.js';
import { recordReview } from '../../src/ledger/review.js';
import { getOrganization } from '../../src/orgs/organization-record.js';
import { createOrganization } from '../../src/orgs/organizations.js';
import type { Dimension } from '../../src/reports/params.js';
import { buildReport } from '../../src/reports/report.js';
import { migrateToLatest, type Storage } from '../../src/storage/db.js';
import { trackEvent } from '../../src/tracking/track.js';
import { childEnv, CLI, createChildDatabase, type ChildDatabase } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { TEST_SECRET_KEY } from '../support/secret-key.js';
import { unlimited } from '../reports/unlimited.js';

const NOW = '2026-11-20T12:00:00.000Z';

/** Agent, task type, outcome, client, occurred_at, agent cost: September to November. */
const EVENTS = [
  ['a1', 'dev_code_review', 'success', 'acme', '2026-10-02T09:00:00Z', 0.5],
  ['a2', 'dev_code_review', 'needs_review', 'globex', '2026-10-15T09:00:00Z', null],
  ['a1', 'dev_bug_fix', 'success', 'acme', '2026-10-20T09:00:00Z', 1],
  ['a3', 'dev_code_review', 'failure', null, '2026-11-03T09:00:00Z', 0.25],
  ['a2', 'dev_code_review', 'success', 'acme', '2026-11-10T09:00:00Z', null],
  ['a1', 'dev_code_review', 'success', 'globex', '2026-09-30T23:59:59Z', 2],
  ['a3', 'dev_code_review', 'needs_review', 'acme', '2026-11-12T09:00:00Z', 0.1],
] as const;
type Row = (typeof EVENTS)[number] | [string, string, string, string | null, string, number | null];

/** The event reviewed (index in EVENTS) and its review. */
const REVIEWED = 1;
const REVIEW = { review_minutes: 5, verdict: 'accepted' } as const;

const CHANGE = {
  kind: 'baseline_override',
  key: 'dev_code_review',
  value: 41.5,
  effective_from: '2026-10-01',
} as const;

const GROUPINGS: Dimension[][] = [['month'], ['month', 'agent'], ['month', 'task_type'], ['month', 'client']];

function inputOf([agent, type, outcome, client, at, cost]: Row) {
  return {
    agent_id: agent,
    task_type: type,
    outcome: outcome as 'success',
    occurred_at: at,
    ...(cost === null ? {} : { agent_cost: cost }),
    ...(client === null ? {} : { metadata: { client_id: client } }),
  };
}

async function trackAll(ctx: OrgCtx, rows: readonly Row[]): Promise<string[]> {
  const ids = [];
  for (const row of rows)
    ids.push((await trackEvent({ ctx, idempotencyKey: null, input: inputOf(row) })).event.event_id);
  return ids;
}

/** Every grouping's report rows, all time: what a recomputation must equal. */
async function reports(ctx: OrgCtx) {
  const out = [];
  for (const groupBy of GROUPINGS) {
    const report = await buildReport({
      ctx,
      input: { period: 'all', groupBy, sort: 'events', top: null, filters: { metadata: [] } },
    });
    out.push(report.rows);
  }
  return out;
}

/** An organisation that had the change from the start, then tracked and reviewed the same events. */
async function recomputation(ctx: OrgCtx, rows: readonly Row[], reviewed: number | null) {
  await restate({ ctx, input: { ...CHANGE, reason: 'from the start' } });
  const ids = await trackAll(ctx, rows);
  if (reviewed !== null)
    await recordReview({ ctx, eventId: ids[reviewed] as string, input: REVIEW, idempotencyKey: null });
  return reports(ctx);
}

const person = (role: 'admin' | 'analyst'): Actor => ({
  kind: 'person',
  accountId: 'acct_1',
  email: 'ana@example.com',
  role,
});

async function codeOf(promise: Promise<unknown>): Promise<string | null> {
  try {
    await promise;
    return null;
  } catch (error) {
    return error instanceof AppError ? error.code : String(error);
  }
}

describe.each(ENGINES)('applying a restatement (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { now: NOW, rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  it('previews, then applies through HTTP: reports equal a recomputation, reviews kept, one message', async () => {
    const org = await h.createOrg({ plan: 'pro' });
    const ctx = await h.orgCtx(org);
    const call = (method: 'GET' | 'POST', url: string, payload?: object) =>
      h.request({ method, url, apiKey: org.apiKey, ...(payload ? { payload } : {}) });
    const hook = await call('POST', '/v1/webhooks', {
      url: 'https://hooks.example.com/tally',
      event_types: ['figures.restated'],
    });
    expect(hook.statusCode, hook.body).toBe(201);
    const ids = await trackAll(ctx, EVENTS);
    const reviewed = ids[REVIEWED] as string;
    const review = await call('POST', `/v1/events/${reviewed}/review`, REVIEW);
    expect(review.statusCode, review.body).toBe(201);

    const preview = (await call('POST', '/v1/restatements/preview', CHANGE)).json();
    // Oct 2, Oct 15 (reviewed), Nov 10, Nov 12: not September's, not the bug fix, not the failure.
    expect(preview.events.map((e: { event_id: string }) => e.event_id)).toEqual(
      [0, 1, 4, 6].map((i) => ids[i]),
    );
    // "Before" is the event's figures now: the reviewed one's are the review's.
    const shown = preview.events[1];
    expect(shown.before.hours_saved).toBe(
      (await call('GET', `/v1/events/${reviewed}/adjustments`)).json().current.hours_saved,
    );
    expect(shown.before.hours_saved).toBe(Math.round(((30 - 5) / 60) * 1e6) / 1e6);
    // "After": the review's time against the new baseline.
    expect(shown.after.hours_saved).toBe(Math.round(((41.5 - 5) / 60) * 1e6) / 1e6);
    expect(shown.after.resolved_baseline_minutes).toBe(41.5);

    const applied = await call('POST', '/v1/restatements', { ...CHANGE, reason: 'time study' });
    expect(applied.statusCode, applied.body).toBe(201);
    const r = applied.json();
    // Four events' figures move; the failure saves nothing either way but gets an entry for its baseline.
    expect(r).toMatchObject({ status: 'applied', events_adjusted: 5, reason: 'time study' });
    expect(r.version.restatement_id).toBe(r.id);
    expect((await call('GET', `/v1/restatements/${r.id}`)).json()).toEqual(r);
    expect((await call('GET', '/v1/restatements/rst_nope')).statusCode).toBe(404);

    // The live reports equal those of an organisation that had the change from the start.
    const fresh = await h.createOrg({ plan: 'pro' });
    expect(await reports(ctx)).toEqual(await recomputation(await h.orgCtx(fresh), EVENTS, REVIEWED));

    // The event's ledger: its review, then the restatement; the review stays in force.
    const ledger = (await call('GET', `/v1/events/${reviewed}/adjustments`)).json();
    expect(ledger.data.map((a: { cause: string; cause_id: string }) => [a.cause, a.cause_id])).toEqual([
      ['review', ledger.review.id],
      ['restatement', r.id],
    ]);
    expect(ledger.current.hours_saved).toBe(shown.after.hours_saved);
    for (const i of [0, 3, 4, 6]) {
      const entries = (await call('GET', `/v1/events/${ids[i]}/adjustments`)).json().data;
      expect(entries.map((a: { cause_id: string }) => a.cause_id)).toEqual([r.id]);
    }

    // One message, with the change, the sums and the months.
    const messages = await h.storage.db
      .selectFrom('webhook_messages')
      .select('payload')
      .where('org_id', '=', org.id)
      .where('type', '=', 'figures.restated')
      .execute();
    expect(messages).toHaveLength(1);
    const payload = JSON.parse(messages[0]?.payload ?? '{}');
    expect(payload).toMatchObject({
      restatement: { id: r.id, reason: 'time study', status: 'applied', change: r.version },
      affected_events: 5,
      delta: { hours_saved: preview.delta.hours_saved, cost_saved: preview.delta.cost_saved },
      months: ['2026-10', '2026-11'],
    });
    // Nothing left to move.
    expect((await call('POST', '/v1/restatements/preview', CHANGE)).json().affected_events).toBe(0);
  });

  it('refuses an analyst the review, the preview and the restatement', async () => {
    const org = await h.createOrg({ plan: 'pro' });
    const admin = await h.orgCtx(org);
    const [id] = await trackAll(admin, EVENTS.slice(0, 1));
    const analyst: OrgCtx = { ...admin, actor: person('analyst') };
    const change = await checkChange(admin, CHANGE);
    expect(
      await codeOf(
        recordReview({ ctx: analyst, eventId: id as string, input: REVIEW, idempotencyKey: null }),
      ),
    ).toBe('insufficient_role');
    expect(await codeOf(previewChange({ ctx: analyst, change }))).toBe('insufficient_role');
    expect(await codeOf(restate({ ctx: analyst, input: { ...CHANGE, reason: 'no' } }))).toBe(
      'insufficient_role',
    );
    // Nothing written; an admin person may.
    expect(
      await h.storage.db.selectFrom('restatements').select('id').where('org_id', '=', org.id).execute(),
    ).toEqual([]);
    const adminPerson: OrgCtx = { ...admin, actor: person('admin') };
    expect(await codeOf(previewChange({ ctx: adminPerson, change }))).toBeNull();
  });

  it('answers a large one staging, finishes it in the background while tracking goes on', async () => {
    const org = await h.createOrg({ plan: 'pro' });
    const ctx = await h.orgCtx(org);
    await trackAll(ctx, EVENTS);
    const during: Row[] = [];
    let batches = 0;
    const r = await restate({
      ctx,
      input: { ...CHANGE, reason: 'big' },
      hooks: {
        inline: 2,
        batch: 2,
        afterBatch: async () => {
          // Tracking during the walk: an October code review, priced by the new history already.
          batches += 1;
          const row: Row = [
            'a4',
            'dev_code_review',
            'success',
            'acme',
            `2026-10-0${batches}T10:00:00Z`,
            null,
          ];
          during.push(row);
          // As a request would: the organisation read again, with its assumptions' revision.
          await trackAll(await h.orgCtx(org), [row]);
        },
      },
    });
    expect(r.status).toBe('staging');
    // The sweeper's pass waits for the one running here, then reports it applied.
    expect(await finishRestatements(h.ctx)).toEqual([{ id: r.id, status: 'applied' }]);
    expect(batches).toBeGreaterThanOrEqual(4);
    const fresh = await h.createOrg({ plan: 'pro' });
    expect(await reports(ctx)).toEqual(
      await recomputation(await h.orgCtx(fresh), [...EVENTS, ...during], null),
    );
    // Each event restated at most once.
    const entries = await h.storage.db
      .selectFrom('adjustments')
      .select('event_id')
      .where('cause_id', '=', r.id)
      .execute();
    expect(new Set(entries.map((e) => e.event_id)).size).toBe(entries.length);
    // The events tracked meanwhile were priced by the new history: none of them has an entry.
    expect(entries.length).toBe(5);
  });
});

describe.each(ENGINES)('a restatement killed while applied (%s)', (engine) => {
  let database: ChildDatabase | null = null;
  let storage: Storage | null = null;
  afterEach(async () => {
    await storage?.close();
    await database?.destroy();
    storage = null;
    database = null;
  });

  async function killAt(stopAt: string, line: string, env: Record<string, string>): Promise<void> {
    const child = spawn(process.execPath, [...CLI.slice(0, 2), 'test/assumptions/restate-child.ts'], {
      env: childEnv({ STOP_AT: stopAt, ...env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes(line)) resolve();
      });
      child.on('exit', () => reject(new Error(`child exited before "${line}": ${out} ${err}`)));
    });
    child.kill('SIGKILL');
    await exited;
  }

  for (const stopAt of ['staged', 'publish'] as const)
    it(
      `is not applied when killed ${stopAt === 'staged' ? 'while staging' : 'while publishing'}; a restarted service finishes it`,
      { timeout: 60_000 },
      async () => {
        database = await createChildDatabase(engine);
        storage = database.open();
        await migrateToLatest(storage.db);
        const clock = new ManualClock(NOW);
        const config = loadConfig({ TALLY_LOG_LEVEL: 'silent', TALLY_SECRET_KEY: TEST_SECRET_KEY });
        const base = { db: storage.db, engine, clock, config, storage };
        const ctxOf = async (name: string): Promise<OrgCtx> => {
          const created = await createOrganization({ ctx: base, input: { name, plan: 'pro' } });
          return { ...base, org: await getOrganization({ ctx: base, id: created.org.id }), actorKeyId: null };
        };
        const ctx = await ctxOf('Acme');
        await trackAll(ctx, EVENTS);
        const before = await reports(ctx);

        await killAt(stopAt, stopAt === 'staged' ? 'staged' : 'publishing', {
          TALLY_DATABASE_URL: database.url,
          ORG_ID: ctx.org.id,
          CHANGE: JSON.stringify({ ...CHANGE, reason: 'killed' }),
        });
        const [state] = await storage.db.selectFrom('restatements').selectAll().execute();
        expect(state?.status).toBe('staging');
        // Not half: no entry, the reports as they were.
        expect(await storage.db.selectFrom('adjustments').select('id').execute()).toEqual([]);
        expect(await reports(ctx)).toEqual(before);

        // The restarted service's sweeper finishes it, once.
        expect(await finishRestatements(base)).toEqual([{ id: state?.id, status: 'applied' }]);
        expect(await finishRestatements(base)).toEqual([]);
        const fresh = await ctxOf('Recomputed');
        expect(await reports(ctx)).toEqual(await recomputation(fresh, EVENTS, null));
        const messages = await storage.db
          .selectFrom('webhook_messages')
          .select('id')
          .where('type', '=', 'figures.restated')
          .where('org_id', '=', ctx.org.id)
          .execute();
        // One message, though the publication ran twice (killed, then finished); one audit entry each.
        expect(messages).toHaveLength(1);
        const audit = await storage.db
          .selectFrom('audit_log')
          .select('action')
          .where('org_id', '=', ctx.org.id)
          .where('action', 'in', ['assumption.restated', 'figures.restated'])
          .execute();
        expect(audit.map((a) => a.action).sort()).toEqual(['assumption.restated', 'figures.restated']);
      },
    );
});
