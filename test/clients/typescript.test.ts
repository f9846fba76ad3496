import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tally, TallyError, verifyWebhook, type TrackBatchItem } from '../../clients/typescript/src/index.js';
import type * as T from '../../clients/typescript/src/types.js';
import { addMembership, createAccount } from '../../src/accounts/store.js';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { authenticate } from '../../src/orgs/authenticator.js';
import { openStorage } from '../../src/storage/db.js';
import { CLIENT_TYPES_FILE, generateClientTypes } from '../../scripts/generate-client-types.js';
import { tempFile } from '../support/temp.js';
import { startDroppingProxy, startReceiver, startTally, type Served } from './service.js';

const README = fileURLToPath(new URL('../../clients/typescript/README.md', import.meta.url));
const CLIENT_ENTRY = pathToFileURL(
  fileURLToPath(new URL('../../clients/typescript/src/index.ts', import.meta.url)),
).href;
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The fenced blocks of one language in a Markdown file. */
export function codeBlocks(markdown: string, language: string): string[] {
  return [...markdown.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)]
    .filter((m) => m[1] === language)
    .map((m) => m[2] ?? '');
}

function runExample(file: string, env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', file],
      { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
          output: stdout + stderr,
        });
      },
    );
  });
}

const TRACK = { agent_id: 'ts-bot', task_type: 'support_ticket_reply', outcome: 'success' } as const;

async function raw(served: Served, path: string, apiKey = served.apiKey) {
  const res = await fetch(`${served.baseUrl}${path}`, { headers: { authorization: `Bearer ${apiKey}` } });
  return res.json() as Promise<unknown>;
}

/** A report without its `meta.range`, which moves with the clock between two calls. */
function timeless(report: unknown) {
  const { meta, ...rest } = report as { meta: { range: unknown } };
  const { range: _range, ...stable } = meta;
  return { ...rest, meta: stable };
}

describe('the generated client types', () => {
  it('are what `npm run clients:generate` writes from the current document', async () => {
    const committed = readFileSync(CLIENT_TYPES_FILE, 'utf8');
    expect(committed === (await generateClientTypes()), 'run npm run clients:generate and commit').toBe(true);
  });
});

describe('the TypeScript client on a failing network', () => {
  it('retries a 503 with the same idempotency key, and gives up with the last error', async () => {
    const keys: (string | undefined)[] = [];
    const server = createServer((req, res) => {
      keys.push(req.headers['idempotency-key'] as string | undefined);
      if (keys.length === 1) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' });
        res.end(
          JSON.stringify({ error: { code: 'service_unavailable', message: 'down', request_id: 'req_1' } }),
        );
      } else {
        res.writeHead(201, { 'content-type': 'application/json' }).end('{"event_id":"evt_1"}');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const tally = new Tally({ apiKey: 'tally_live_x', baseUrl, retryBaseDelayMs: 10 });
      expect((await tally.track(TRACK)).event_id).toBe('evt_1');
      expect(keys).toHaveLength(2);
      expect(keys[0]).toMatch(/^tally-js-/);
      expect(keys[1]).toBe(keys[0]);
      keys.length = 0;
      const once = new Tally({ apiKey: 'tally_live_x', baseUrl, maxRetries: 0 });
      await expect(once.track(TRACK)).rejects.toMatchObject({
        code: 'service_unavailable',
        status: 503,
        requestId: 'req_1',
      });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('times out a server that never answers', async () => {
    const sockets: Socket[] = [];
    // Attempts are counted by the requests that arrive: fetch may open a connection it never
    // uses, so connections alone would count one too many now and then.
    let requests = 0;
    const silent = createTcpServer((socket) => {
      sockets.push(socket);
      socket.on('data', (chunk: Buffer) => {
        requests += chunk.toString('latin1').match(/^GET \/v1\/reports\/usage /gm)?.length ?? 0;
      });
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const baseUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      const tally = new Tally({
        apiKey: 'tally_live_x',
        baseUrl,
        timeoutMs: 200,
        maxRetries: 1,
        retryBaseDelayMs: 10,
      });
      await expect(tally.usage()).rejects.toMatchObject({ code: 'timeout', status: 0 });
      expect(requests).toBe(2);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});

describe('the TypeScript client against tally serve', () => {
  let served: Served;
  let tally: Tally;
  beforeAll(async () => {
    served = await startTally();
    tally = new Tally({ apiKey: served.apiKey, baseUrl: served.baseUrl, retryBaseDelayMs: 50 });
  });
  afterAll(async () => served?.stop());

  it('tracks with a generated key, with the caller key (replayed, not counted twice), and reads it back', async () => {
    const event = await tally.track({ ...TRACK, agent_id: 'keys' });
    expect(event.event_id).toMatch(/^evt_/);
    expect(event.hours_saved).toBeGreaterThan(0);
    const first = await tally.track({ ...TRACK, agent_id: 'keys' }, { idempotencyKey: 'job-42' });
    const again = await tally.track({ ...TRACK, agent_id: 'keys' }, { idempotencyKey: 'job-42' });
    expect(again.event_id).toBe(first.event_id);
    const listed = await tally.events.list({ agent_id: 'keys' });
    expect(listed.data).toHaveLength(2);
    expect(await tally.events.get(event.event_id)).toEqual(event);
  });

  it('records a review with a key (replayed once), and reads the event’s ledger and reviews', async () => {
    const event = await tally.track({
      ...TRACK,
      agent_id: 'reviewed',
      outcome: 'needs_review',
      human_baseline_minutes: 60,
    });
    const first = await tally.review(
      event.event_id,
      { review_minutes: 15, verdict: 'accepted', reviewer: 'ana' },
      { idempotencyKey: 'rev-1' },
    );
    const again = await tally.review(
      event.event_id,
      { review_minutes: 15, verdict: 'accepted', reviewer: 'ana' },
      { idempotencyKey: 'rev-1' },
    );
    expect(again.review.id).toBe(first.review.id);
    expect(first.event.current.hours_saved).toBe(0.75);
    expect(first.event.current.review_hours).toBe(0.25);
    const rejected = await tally.review(event.event_id, { review_minutes: 30, verdict: 'rejected' });
    expect(rejected.event.current.hours_saved).toBe(-0.5);
    const ledger = await tally.events.adjustments(event.event_id);
    expect(ledger.original.hours_saved).toBe(0.5);
    expect(ledger.data.map((a) => a.hours_saved)).toEqual([0.25, -1.25]);
    expect((await tally.events.reviews(event.event_id)).data.map((r) => r.verdict)).toEqual([
      'accepted',
      'rejected',
    ]);
    const refused = await tally
      .review(event.event_id, { review_minutes: -1, verdict: 'accepted' })
      .catch((x: TallyError) => x);
    expect(refused).toMatchObject({ code: 'validation_error', status: 422 });
  });

  it('throws one typed error with code, status, message, request id and details', async () => {
    const error = await tally.track({ ...TRACK, outcome: 'great' as 'success' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TallyError);
    const e = error as TallyError;
    expect([e.code, e.status]).toEqual(['validation_error', 422]);
    expect(e.requestId).toMatch(/^req_/);
    expect(e.details[0]?.path).toBe('/body/outcome');
    const missing = await tally.events.get('evt_nope').catch((x: TallyError) => x);
    expect(missing).toMatchObject({ code: 'not_found', status: 404 });
    const wrongKey = new Tally({ apiKey: 'tally_live_nope', baseUrl: served.baseUrl });
    await expect(wrongKey.settings.get()).rejects.toMatchObject({ code: 'invalid_api_key', status: 401 });
  });

  it('retries a track whose answer was lost and creates exactly one event', async () => {
    const proxy = await startDroppingProxy(served.baseUrl, 1);
    try {
      const viaProxy = new Tally({ apiKey: served.apiKey, baseUrl: proxy.url, retryBaseDelayMs: 50 });
      const event = await viaProxy.track({ ...TRACK, agent_id: 'lost-answer' });
      expect(proxy.dropped()).toBe(1);
      const listed = await tally.events.list({ agent_id: 'lost-answer' });
      expect(listed.data.map((e) => e.event_id)).toEqual([event.event_id]);
    } finally {
      await proxy.close();
    }
  });

  it('waits out 429s (Retry-After) on a plan with a low track rate, and surfaces them without retries', async () => {
    const freeKey = await served.createOrg('free');
    let limited = 0;
    const counting: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (res.status === 429) limited++;
      return res;
    };
    const free = new Tally({ apiKey: freeKey, baseUrl: served.baseUrl, fetch: counting, maxRetries: 8 });
    const events = await Promise.all(
      Array.from({ length: 10 }, (_, i) => free.track({ ...TRACK, agent_id: `rl-${i}` })),
    );
    expect(new Set(events.map((e) => e.event_id)).size).toBe(10);
    expect(limited).toBeGreaterThan(0);
    expect((await free.events.list({ limit: 100 })).data).toHaveLength(10);
    const impatient = new Tally({ apiKey: freeKey, baseUrl: served.baseUrl, maxRetries: 0 });
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => impatient.track(TRACK)));
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(rejected.length).toBeGreaterThan(0);
    expect(rejected[0]?.reason).toMatchObject({ code: 'rate_limited', status: 429 });
  });

  it('batches in the background, retries rate-limited items, reports rejected ones and never drops silently', async () => {
    const freeKey = await served.createOrg('free');
    const rejected: { event: TrackBatchItem; code: string }[] = [];
    const batching = new Tally({
      apiKey: freeKey,
      baseUrl: served.baseUrl,
      batch: {
        maxBatchSize: 4,
        flushIntervalMs: 50,
        maxAttempts: 20,
        onError: (event, error) => rejected.push({ event, code: error.code }),
      },
    });
    for (let i = 0; i < 6; i++) batching.enqueue({ ...TRACK, agent_id: `batch-${i}` });
    batching.enqueue({ ...TRACK, agent_id: 'batch-bad', task_type: 'no_such_type' });
    batching.enqueue({ ...TRACK, agent_id: 'batch-bad', occurred_at: 'yesterday' });
    await batching.shutdown();
    expect(rejected.map((r) => r.code).sort()).toEqual(['unknown_task_type', 'validation_error']);
    expect(rejected.every((r) => r.event.agent_id === 'batch-bad')).toBe(true);
    // The Free track rate is 2/s: most of the 6 good events were rate-limited at first and sent again.
    const stored = await new Tally({ apiKey: freeKey, baseUrl: served.baseUrl }).events.list({ limit: 100 });
    expect(stored.data.map((e) => e.agent_id).sort()).toEqual(
      Array.from({ length: 6 }, (_, i) => `batch-${i}`),
    );
    expect(() => batching.enqueue(TRACK)).toThrow(expect.objectContaining({ code: 'client_closed' }));

    const small = new Tally({
      apiKey: freeKey,
      baseUrl: served.baseUrl,
      batch: { maxBufferSize: 2, maxBatchSize: 10, flushIntervalMs: 60_000 },
    });
    small.enqueue(TRACK);
    small.enqueue(TRACK);
    expect(() => small.enqueue(TRACK)).toThrow(expect.objectContaining({ code: 'buffer_full' }));
    await small.shutdown();
  });

  it('sends a direct batch with keys, so a retried batch counts each event once', async () => {
    const items = [
      { ...TRACK, agent_id: 'direct', idempotency_key: 'd-1' },
      { ...TRACK, agent_id: 'direct', task_type: 'nope' },
    ];
    const first = await tally.trackBatch(items);
    expect(first.data.map((d) => d.status)).toEqual([201, 422]);
    const again = await tally.trackBatch(items.slice(0, 1));
    expect(again.data[0]?.event?.event_id).toBe(first.data[0]?.event?.event_id);
  });

  it('returns reports equal to the API JSON, CSV text and the export as a stream', async () => {
    for (let i = 0; i < 3; i++)
      await tally.track({ ...TRACK, agent_id: `report-${i}`, metadata: { client_id: 'acme' } });
    const query = '?period=30d&group_by=agent,task_type&sort=cost_saved';
    expect(
      timeless(
        await tally.reports.timeSaved({ period: '30d', group_by: 'agent,task_type', sort: 'cost_saved' }),
      ),
    ).toEqual(timeless(await raw(served, `/v1/reports/time-saved${query}`)));
    expect(timeless(await tally.reports.costSaved({ group_by: 'client' }))).toEqual(
      timeless(await raw(served, '/v1/reports/cost-saved?group_by=client')),
    );
    expect(timeless(await tally.reports.leaderboard({ metric: 'events', top: 2 }))).toEqual(
      timeless(await raw(served, '/v1/reports/leaderboard?metric=events&top=2')),
    );
    const filtered = await tally.reports.timeSaved({ group_by: 'agent', metadata: { client_id: 'acme' } });
    expect(timeless(filtered)).toEqual(
      timeless(await raw(served, '/v1/reports/time-saved?group_by=agent&metadata.client_id=acme')),
    );
    expect(filtered.rows).toHaveLength(3);
    expect(await tally.usage()).toEqual(await raw(served, '/v1/reports/usage'));
    const csv = await tally.reports.csv('time-saved', { group_by: 'agent' });
    expect(csv.split('\r\n')[0] ?? csv.split('\n')[0]).toMatch(/^agent_id,events,hours_saved/);
    const stream = await tally.reports.export({ group_by: 'agent' });
    const text = await new Response(stream).text();
    expect(text).toBe(csv);
  });

  it('manages budgets, fixed costs and report schedules, and reads forecast and payback as the API does', async () => {
    const forecast = await tally.reports.forecast({ agent_id: TRACK.agent_id });
    const rawForecast = (await raw(
      served,
      `/v1/reports/forecast?agent_id=${TRACK.agent_id}`,
    )) as typeof forecast;
    // The parts that do not move with the clock between the two calls (the rest of today does).
    const stable = (f: typeof forecast) => ({
      month: f.month,
      filters: f.filters,
      method: f.method.name,
      basis: f.method.basis,
      month_to_date: f.month_to_date,
      basis_days: f.basis_days,
    });
    expect(stable(forecast)).toEqual(stable(rawForecast));
    expect(forecast.method.description.length).toBeGreaterThan(20);

    const budget = await tally.budgets.create({
      name: 'TS bot',
      scope: 'agent',
      scope_value: TRACK.agent_id,
      amount: 1,
    });
    expect(budget).toMatchObject({
      scope: 'agent',
      thresholds: [50, 80, 100],
      status: { month: expect.any(String) },
    });
    expect((await tally.budgets.get(budget.id)).name).toBe('TS bot');
    const listed = [];
    for await (const b of tally.budgets.iterate({ limit: 1 })) listed.push(b.id);
    expect(listed).toContain(budget.id);
    expect((await tally.budgets.update(budget.id, { amount: 2 })).amount).toBe(2);
    await tally.budgets.delete(budget.id);
    await expect(tally.budgets.get(budget.id)).rejects.toMatchObject({ code: 'not_found', status: 404 });
    await expect(
      tally.budgets.create({ name: 'x', scope: 'org', scope_value: 'nope', amount: 1 }),
    ).rejects.toMatchObject({ code: 'validation_error', status: 422 });

    const cost = await tally.fixedCosts.create({
      name: 'Licence',
      kind: 'monthly',
      amount: 100,
      start_month: '2026-01',
    });
    expect((await tally.fixedCosts.update(cost.id, { end_month: '2026-03' })).end_month).toBe('2026-03');
    expect((await tally.fixedCosts.list()).data.map((c) => c.id)).toContain(cost.id);
    const payback = await tally.reports.payback({ period: 'all' });
    const rawPayback = (await raw(served, '/v1/reports/payback?period=all')) as typeof payback;
    expect(payback.months).toEqual(rawPayback.months);
    expect(payback.payback.status).toBe(rawPayback.payback.status);
    expect({ ...payback.period, range: null }).toEqual({ ...rawPayback.period, range: null });
    expect(payback.period.fixed_costs).toBeGreaterThanOrEqual(300);
    await tally.fixedCosts.delete(cost.id);

    const schedule = await tally.reportSchedules.create({
      frequency: 'monthly',
      recipients: ['ts@acme.test'],
    });
    expect(schedule.recipients).toEqual([{ email: 'ts@acme.test', unsubscribed_at: null }]);
    expect((await tally.reportSchedules.update(schedule.id, { frequency: 'weekly' })).frequency).toBe(
      'weekly',
    );
    const sent = await tally.reportSchedules.send(schedule.id);
    expect(sent.queued).toEqual(['ts@acme.test']);
    expect((await tally.reportSchedules.send(schedule.id)).queued).toEqual([]);
    await tally.reportSchedules.delete(schedule.id);
    expect((await tally.reportSchedules.list()).data).toEqual([]);
  });

  it('closes and reads a month, and is refused reopening it with an admin key, as the API does', async () => {
    const closed = await tally.periods.close('2024-01', 'TS books');
    expect(closed).toMatchObject({ month: '2024-01', reason: 'TS books', totals: { events: 0 } });
    await expect(tally.periods.close('2024-01', 'again')).rejects.toMatchObject({
      code: 'validation_error',
      status: 422,
    });
    expect((await tally.periods.list()).data.map((p) => [p.month, p.status])).toContainEqual([
      '2024-01',
      'closed',
    ]);
    expect(await tally.periods.get('2024-01')).toEqual(await raw(served, '/v1/periods/2024-01'));
    expect((await tally.periods.changes('2024-01')).entries).toEqual([]);
    expect((await tally.periods.csv('2024-01')).split('\r\n')[0]).toBe(
      'dimension,key,events,hours_saved,cost_saved,agent_cost,net_saved,review_hours,review_cost',
    );
    // Reopening needs the owner role: an admin key is refused (an owner reopens in the dashboard).
    await expect(tally.periods.reopen('2024-01', 'TS fix')).rejects.toMatchObject({
      code: 'insufficient_role',
      status: 403,
    });
    expect((await tally.periods.statements('2024-01')).data).toHaveLength(1);
    expect((await tally.periods.get('2024-01')).reopened_at).toBeNull();
  });

  it('invites, resends and revokes, and manages members with their roles', async () => {
    const invitation = await tally.invitations.create({ email: 'TS.Person@example.com', role: 'analyst' });
    expect(invitation).toMatchObject({ email: 'ts.person@example.com', role: 'analyst', status: 'pending' });
    expect((await tally.invitations.get(invitation.id)).sent_count).toBe(1);
    expect((await tally.invitations.resend(invitation.id)).sent_count).toBe(2);
    const pending: string[] = [];
    for await (const i of tally.invitations.iterate({ status: 'pending', limit: 1 })) pending.push(i.id);
    expect(pending).toContain(invitation.id);
    expect((await tally.invitations.revoke(invitation.id)).status).toBe('revoked');
    expect((await tally.invitations.list({ status: 'revoked' })).data.map((i) => i.id)).toContain(
      invitation.id,
    );
    await expect(tally.invitations.create({ email: 'x@example.com', role: 'owner' })).rejects.toMatchObject({
      code: 'insufficient_role',
      status: 403,
    });

    // A person of the organisation, made the way an accepted invitation does.
    const storage = openStorage(served.env.TALLY_DATABASE_URL ?? '');
    try {
      const ctx = { db: storage.db, engine: storage.engine, clock: systemClock, config: loadConfig({}) };
      const orgId = (await authenticate({ ctx, token: served.apiKey })).org.id;
      for (const [email, role] of [
        ['ts.owner@example.com', 'owner'],
        ['ts.analyst@example.com', 'analyst'],
      ] as const) {
        const account = await createAccount({ ctx, email });
        await addMembership({ ctx, orgId, accountId: account.id, role });
      }
    } finally {
      await storage.close();
    }
    const members: T.Member[] = [];
    for await (const m of tally.members.iterate({ limit: 1 })) members.push(m);
    const analyst = members.find((m) => m.email === 'ts.analyst@example.com');
    expect(analyst).toMatchObject({ role: 'analyst', last_seen_at: null });
    const id = analyst?.account_id ?? '';
    expect((await tally.members.get(id)).email).toBe('ts.analyst@example.com');
    expect((await tally.members.setRole(id, 'admin')).role).toBe('admin');
    await expect(
      tally.invitations.create({ email: 'ts.analyst@example.com', role: 'analyst' }),
    ).rejects.toMatchObject({
      code: 'already_member',
      status: 409,
    });
    await tally.members.remove(id);
    await expect(tally.members.get(id)).rejects.toMatchObject({ code: 'not_found', status: 404 });
    expect((await tally.members.list()).data.map((m) => m.email)).toEqual(['ts.owner@example.com']);
  });

  it('manages task types, settings, webhooks and reads the audit log', async () => {
    const custom = await tally.taskTypes.create({
      key: 'ts_custom',
      display_name: 'A custom task',
      category: 'ops',
      default_baseline_minutes: 12,
    });
    expect(custom.kind).toBe('custom');
    expect(
      (
        await tally.taskTypes.setOverride('support_ticket_reply', {
          baseline_minutes_override: 9,
          reason: 'measured',
        })
      ).override?.baseline_minutes_override,
    ).toBe(9);
    expect((await tally.taskTypes.removeOverride('support_ticket_reply')).override).toBeNull();
    expect((await tally.taskTypes.archive('ts_custom')).status).toBe('archived');
    const types = await tally.taskTypes.list({ category: 'ops', include_archived: true });
    expect(types.data.some((t) => t.key === 'ts_custom')).toBe(true);
    const settings = await tally.settings.update({ category_hourly_rates: { dev: 90 } });
    expect(settings.category_hourly_rates.dev).toBe(90);
    expect(await tally.settings.get()).toEqual(settings);
    const hook = await tally.webhooks.create({
      url: 'http://127.0.0.1:9/none',
      event_types: ['weekly.digest'],
    });
    expect(hook.secret).toMatch(/^whsec_/);
    expect((await tally.webhooks.update(hook.id, { description: 'x' })).description).toBe('x');
    expect((await tally.webhooks.get(hook.id)).id).toBe(hook.id);
    const ids: string[] = [];
    for await (const w of tally.webhooks.iterate({ limit: 1 })) ids.push(w.id);
    expect(ids).toContain(hook.id);
    await tally.webhooks.delete(hook.id);
    const actions: string[] = [];
    for await (const entry of tally.auditLog.iterate({ limit: 2 })) actions.push(entry.action);
    expect(actions.length).toBeGreaterThanOrEqual(5);
    let count = 0;
    for await (const event of tally.events.iterate({ limit: 3 })) if (event.event_id) count++;
    expect(count).toBeGreaterThan(5);
  });

  it('configures single sign-on; the secret never comes back', async () => {
    await expect(tally.sso.get()).rejects.toMatchObject({ code: 'not_found', status: 404 });
    const put = await tally.sso.put({
      issuer: 'https://login.example.com/tenant',
      client_id: 'ts-client',
      client_secret: 'ts-client-secret',
      allowed_domains: ['example.com'],
      passwords_allowed: false,
    });
    expect(put).toMatchObject({ client_id: 'ts-client', client_secret_set: true, passwords_allowed: false });
    expect(JSON.stringify(put)).not.toContain('ts-client-secret');
    expect(await tally.sso.get()).toEqual(put);
    const changed = await tally.sso.put({
      issuer: put.issuer,
      client_id: 'ts-client-2',
      allowed_domains: put.allowed_domains,
      default_role: 'admin',
    });
    expect(changed).toMatchObject({
      client_id: 'ts-client-2',
      default_role: 'admin',
      passwords_allowed: false,
    });
    await tally.sso.delete();
    await expect(tally.sso.get()).rejects.toMatchObject({ code: 'not_found' });
  });

  it('lists the assumption history, previews a restatement and applies it', async () => {
    // The service runs on the wall clock: a date a week back is in the past.
    const weekAgo = new Date(Date.now() - 7 * 86_400_000).toISOString().slice(0, 10);
    const change = {
      kind: 'category_hourly_rate' as const,
      key: 'legal',
      value: 77,
      effective_from: weekAgo,
    };
    const preview = await tally.assumptions.previewRestatement(change);
    expect(preview.restatement).toBe(true);
    expect(preview.affected_events).toBeGreaterThanOrEqual(0);
    const restated = await tally.assumptions.restate({ ...change, reason: 'new rate card' });
    expect(restated.id).toMatch(/^rst_/);
    expect(restated.version).toMatchObject({ kind: 'category_hourly_rate', key: 'legal', value: 77 });
    expect(restated.status).toBe('applied');
    expect(await tally.assumptions.getRestatement(restated.id)).toEqual(restated);
    const history = await tally.assumptions.history({ kind: 'category_hourly_rate', key: 'legal' });
    expect(history.data[0]?.id).toBe(restated.version.id);
    const all: string[] = [];
    for await (const v of tally.assumptions.iterateHistory({ limit: 2 })) all.push(v.id);
    expect(all).toContain(restated.version.id);
  });

  it("manages OpenTelemetry mapping rules and unresolved runs (the export itself is an exporter's)", async () => {
    const end = Date.now() * 1e6;
    const span = (spanId: string, name: string, attributes: Record<string, string>) => ({
      traceId: 'c0ffee00c0ffee00c0ffee00c0ffee00',
      spanId,
      name,
      startTimeUnixNano: String(end - 5e9),
      endTimeUnixNano: String(end),
      attributes: Object.entries(attributes).map(([key, v]) => ({ key, value: { stringValue: v } })),
    });
    const exported = await fetch(`${served.baseUrl}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${served.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  span('00000000000000a1', 'invoke_agent', {
                    'gen_ai.operation.name': 'invoke_agent',
                    'gen_ai.agent.name': 'ts-otel-bot',
                  }),
                ],
              },
            ],
          },
        ],
      }),
    });
    expect(exported.status).toBe(200);
    const runs = await tally.otlp.unresolvedRuns.list();
    expect(runs.data.map((r) => r.agent_id)).toEqual(['ts-otel-bot']);
    const rule = await tally.otlp.mappings.create({
      kind: 'task_type',
      field: 'agent_name',
      value: 'ts-otel-bot',
      task_type: 'dev_code_review',
    });
    expect(rule).toMatchObject({ kind: 'task_type', resolved_runs: 1 });
    expect((await tally.otlp.mappings.list()).data.map((r) => r.id)).toEqual([rule.id]);
    expect((await tally.otlp.unresolvedRuns.list()).data).toEqual([]);
    expect(await tally.otlp.unresolvedRuns.retry()).toEqual({ resolved_runs: 0 });
    await tally.otlp.mappings.delete(rule.id);
    expect((await tally.otlp.mappings.list()).data).toEqual([]);
    const missing = await tally.otlp.unresolvedRuns
      .dismiss('run_01JDXXXXXXXXXXXXXXXXXXXXXX')
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(TallyError);
    expect((missing as TallyError).status).toBe(404);
  });

  it('verifies a real delivery from a real receiver, and rejects a tampered and a stale one', async () => {
    const receiver = await startReceiver();
    try {
      const hook = await tally.webhooks.create({ url: receiver.url, event_types: ['event.created'] });
      const event = await tally.track({ ...TRACK, agent_id: 'webhook-ts' });
      const delivery = await receiver.waitFor((d) => d.body.includes(event.event_id));
      const envelope = await verifyWebhook(delivery.body, delivery.headers, hook.secret);
      expect(envelope.type).toBe('event.created');
      if (envelope.type === 'event.created') expect(envelope.data.event_id).toBe(event.event_id);
      // The Standard Webhooks headers alone verify too.
      const { 'x-tally-signature': _tally, ...standardOnly } = delivery.headers;
      expect((await verifyWebhook(delivery.body, standardOnly, hook.secret)).id).toBe(envelope.id);
      expect(
        (
          await verifyWebhook(
            new TextEncoder().encode(delivery.body),
            new Headers(standardOnly as Record<string, string>),
            hook.secret,
          )
        ).id,
      ).toBe(envelope.id);

      const tampered = delivery.body.replace('"webhook-ts"', '"webhook-tx"');
      await expect(verifyWebhook(tampered, delivery.headers, hook.secret)).rejects.toMatchObject({
        code: 'invalid_signature',
      });
      await expect(verifyWebhook(tampered, standardOnly, hook.secret)).rejects.toMatchObject({
        code: 'invalid_signature',
      });
      await expect(verifyWebhook(delivery.body, delivery.headers, 'whsec_d3Jvbmc=')).rejects.toMatchObject({
        code: 'invalid_signature',
      });
      const sixMinutesLater = Date.now() + 6 * 60 * 1000;
      await expect(
        verifyWebhook(delivery.body, delivery.headers, hook.secret, { now: sixMinutesLater }),
      ).rejects.toMatchObject({ code: 'stale_signature' });
      await expect(
        verifyWebhook(delivery.body, standardOnly, hook.secret, { now: sixMinutesLater }),
      ).rejects.toMatchObject({ code: 'stale_signature' });

      await tally.webhooks.test(hook.id);
      const ping = await receiver.waitFor((d) => d.body.includes('"test.ping"'));
      expect((await verifyWebhook(ping.body, ping.headers, hook.secret)).type).toBe('test.ping');
      const deliveries = await tally.webhooks.deliveries(hook.id);
      expect(deliveries.data.length).toBeGreaterThanOrEqual(2);
    } finally {
      await receiver.close();
    }
  });

  it('runs every example of the README', { timeout: 180_000 }, async () => {
    const blocks = codeBlocks(readFileSync(README, 'utf8'), 'ts');
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    for (const [i, block] of blocks.entries()) {
      const code = block.replaceAll("'@tally/client'", `'${CLIENT_ENTRY}'`);
      const file = tempFile('tally-readme-', `example-${i}.mts`, code);
      const result = await runExample(file, { TALLY_URL: served.baseUrl, TALLY_API_KEY: served.apiKey });
      expect(result.code, `example ${i}:\n${block}\n${result.output}`).toBe(0);
    }
  });
});
