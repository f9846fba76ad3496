import { createConfig, lintFromString } from '@redocly/openapi-core';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMembership, createAccount } from '../../src/accounts/store.js';
import { ERROR_STATUS } from '../../src/errors.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { responseChecker, type OpenApiDocument } from '../support/openapi.js';

const TRACK = { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' };

describe('the OpenAPI document', () => {
  let h: Harness;
  let doc: OpenApiDocument;
  let checker: ReturnType<typeof responseChecker>;
  let free: TestOrg;

  /** One request, checked against the document (`path` is the document's template). */
  async function call(path: string, options: InjectOptions & { apiKey?: string | null }) {
    const res = await h.request(options);
    checker.check(res, options.method ?? 'GET', path);
    return res;
  }

  beforeAll(async () => {
    h = await createHarness('sqlite', { env: { TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
    free = await h.createOrg({ plan: 'free' });
    doc = (await h.request({ method: 'GET', url: '/openapi.json', apiKey: null })).json<OpenApiDocument>();
    checker = responseChecker(doc);
  });
  afterAll(async () => h.close());

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(doc as Parameters<Validator['validate']>[0]);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers).toEqual([expect.objectContaining({ url: expect.stringMatching(/^http/) })]);
  });

  it("passes a linter's recommended rules (Redocly, which openapi-typescript runs)", async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({
      source: JSON.stringify(doc),
      absoluteRef: '/openapi.json',
      config,
    });
    // The licence of the API is not decided by the project (package.json: UNLICENSED).
    expect(
      problems.filter((p) => p.ruleId !== 'info-license').map((p) => `${p.ruleId}: ${p.message}`),
    ).toEqual([]);
  });

  it('names every operation and its schemas, and declares what generators need', () => {
    const ids: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        expect(operation.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z]+$/);
        ids.push(operation.operationId);
        for (const [status, response] of Object.entries(operation.responses)) {
          expect(response.description, `${operation.operationId} ${status}`).not.toBe('Default Response');
          expect(Object.keys(response), `${operation.operationId} ${status}`).toContain('headers');
          if (status.startsWith('4') || status.startsWith('5')) {
            // OTLP/HTTP answers a protobuf export's errors with a protobuf google.rpc.Status.
            const otlp =
              operation.operationId === 'exportTraces'
                ? { 'application/x-protobuf': { schema: expect.objectContaining({ type: 'string' }) } }
                : {};
            expect(response.content).toEqual({
              'application/json': { schema: { $ref: '#/components/schemas/Error' } },
              ...otlp,
            });
          }
        }
      }
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(['trackEvent', 'trackBatch', 'listEvents', 'getEvent']));
    const components = doc.components as {
      schemas: Record<string, { enum?: string[] }>;
      headers: Record<string, unknown>;
    };
    for (const name of ['Event', 'TrackRequest', 'Webhook', 'Report', 'ReportRow', 'Error', 'TaskType'])
      expect(components.schemas).toHaveProperty(name);
    for (const name of ['Settings', 'Usage', 'Outcome', 'Category', 'WebhookStatus', 'DeliveryStatus'])
      expect(components.schemas).toHaveProperty(name);
    expect(components.schemas.ErrorCode?.enum?.sort()).toEqual(Object.keys(ERROR_STATUS).sort());
    expect(Object.keys(components.headers).sort()).toEqual(
      [
        'Idempotent-Replayed',
        'RateLimit-Limit',
        'RateLimit-Remaining',
        'RateLimit-Reset',
        'Retry-After',
        'X-Request-Id',
      ].sort(),
    );
    const text = JSON.stringify(doc);
    expect(text).not.toContain('x-tally-component');
    expect(text).not.toContain('x-response-description');
    const limit = (
      doc.paths['/v1/events']?.get as unknown as { parameters: { name: string }[] }
    ).parameters.find((p) => p.name === 'limit');
    expect(limit).toMatchObject({ required: false, schema: { default: 50 } });
    expect(Object.keys(doc.paths['/v1/reports/export']?.get?.responses['200']?.content ?? {})).toEqual([
      'text/csv',
    ]);
  });

  it('declares every live answer of every endpoint, success and error', async () => {
    // Tracking
    const tracked = await call('/v1/track', {
      method: 'POST',
      url: '/v1/track',
      payload: { ...TRACK, metadata: { client_id: 'acme' } },
      headers: { 'idempotency-key': 'k-1' },
    });
    expect(tracked.statusCode).toBe(201);
    const event = tracked.json<{ event_id: string }>();
    const replay = await call('/v1/track', {
      method: 'POST',
      url: '/v1/track',
      payload: { ...TRACK, metadata: { client_id: 'acme' } },
      headers: { 'idempotency-key': 'k-1' },
    });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(
      (await call('/v1/track', { method: 'POST', url: '/v1/track', payload: { ...TRACK, outcome: 'x' } }))
        .statusCode,
    ).toBe(422);
    expect(
      (await call('/v1/track', { method: 'POST', url: '/v1/track', payload: TRACK, apiKey: null }))
        .statusCode,
    ).toBe(401);
    const batch = await call('/v1/track/batch', {
      method: 'POST',
      url: '/v1/track/batch',
      payload: {
        events: [TRACK, { ...TRACK, task_type: 'no_such_type' }, { ...TRACK, idempotency_key: 'k-1' }],
      },
    });
    expect(batch.statusCode).toBe(207);
    expect(batch.json<{ data: { status: number }[] }>().data.map((d) => d.status)).toEqual([201, 422, 201]);
    expect(
      (await call('/v1/track/batch', { method: 'POST', url: '/v1/track/batch', payload: { events: [] } }))
        .statusCode,
    ).toBe(422);
    expect((await call('/v1/events', { method: 'GET', url: '/v1/events?limit=1' })).statusCode).toBe(200);
    expect((await call('/v1/events', { method: 'GET', url: '/v1/events?limit=0' })).statusCode).toBe(422);
    expect(
      (await call('/v1/events/{event_id}', { method: 'GET', url: `/v1/events/${event.event_id}` }))
        .statusCode,
    ).toBe(200);
    expect(
      (await call('/v1/events/{event_id}', { method: 'GET', url: '/v1/events/evt_nope' })).statusCode,
    ).toBe(404);

    // Reviews and the adjustments ledger (a second later: each key's rate is per second)
    h.clock.advance(1000);
    const review = '/v1/events/{event_id}/review';
    const reviewUrl = `/v1/events/${event.event_id}/review`;
    expect(
      (
        await call(review, {
          method: 'POST',
          url: reviewUrl,
          payload: { review_minutes: 5, verdict: 'accepted' },
        })
      ).statusCode,
    ).toBe(201);
    expect(
      (
        await call(review, {
          method: 'POST',
          url: reviewUrl,
          payload: { review_minutes: -1, verdict: 'accepted' },
        })
      ).statusCode,
    ).toBe(422);
    for (const [path, tail] of [
      ['/v1/events/{event_id}/adjustments', 'adjustments'],
      ['/v1/events/{event_id}/reviews', 'reviews'],
    ] as const) {
      expect(
        (await call(path, { method: 'GET', url: `/v1/events/${event.event_id}/${tail}` })).statusCode,
      ).toBe(200);
      expect((await call(path, { method: 'GET', url: `/v1/events/evt_nope/${tail}` })).statusCode).toBe(404);
    }

    // Task types and the audit log
    expect((await call('/v1/task-types', { method: 'GET', url: '/v1/task-types' })).statusCode).toBe(200);
    expect(
      (await call('/v1/task-types', { method: 'GET', url: '/v1/task-types?category=nope' })).statusCode,
    ).toBe(422);
    const custom = {
      key: 'invoice_check',
      display_name: 'Check an invoice',
      category: 'ops',
      default_baseline_minutes: 7,
    };
    expect(
      (await call('/v1/task-types', { method: 'POST', url: '/v1/task-types', payload: custom })).statusCode,
    ).toBe(201);
    expect(
      (await call('/v1/task-types', { method: 'POST', url: '/v1/task-types', payload: { key: 'X' } }))
        .statusCode,
    ).toBe(422);
    const override = '/v1/task-types/{key}/override';
    const overridePayload = { baseline_minutes_override: 9, reason: 'measured' };
    expect(
      (
        await call(override, {
          method: 'POST',
          url: '/v1/task-types/support_ticket_reply/override',
          payload: overridePayload,
        })
      ).statusCode,
    ).toBe(200);
    expect(
      (
        await call(override, {
          method: 'POST',
          url: '/v1/task-types/nope/override',
          payload: overridePayload,
        })
      ).statusCode,
    ).toBe(404);
    expect(
      (await call(override, { method: 'DELETE', url: '/v1/task-types/support_ticket_reply/override' }))
        .statusCode,
    ).toBe(200);
    expect(
      (await call(override, { method: 'DELETE', url: '/v1/task-types/support_ticket_reply/override' }))
        .statusCode,
    ).toBe(404);
    expect(
      (await call('/v1/task-types/{key}', { method: 'DELETE', url: '/v1/task-types/invoice_check' }))
        .statusCode,
    ).toBe(200);
    expect(
      (await call('/v1/task-types/{key}', { method: 'DELETE', url: '/v1/task-types/support_ticket_reply' }))
        .statusCode,
    ).toBe(409);
    expect((await call('/v1/audit-log', { method: 'GET', url: '/v1/audit-log' })).statusCode).toBe(200);
    expect(
      (await call('/v1/audit-log', { method: 'GET', url: '/v1/audit-log', apiKey: free.apiKey })).statusCode,
    ).toBe(403);

    // Settings
    const settings = await call('/v1/settings', { method: 'GET', url: '/v1/settings' });
    expect(Object.keys(settings.json()).sort()).toEqual(
      [
        'organization_id',
        'plan',
        'name',
        'currency',
        'default_hourly_rate',
        'category_hourly_rates',
        'outcome_credit',
        'fallback_baseline_minutes',
        'usd_exchange_rate',
        'admin_emails',
        'fte_hours_per_month',
        'alert_emails',
        'assumption_history',
      ].sort(),
    );
    expect(
      (await call('/v1/settings', { method: 'GET', url: '/v1/settings', apiKey: 'tally_live_bad' }))
        .statusCode,
    ).toBe(401);
    const patched = await call('/v1/settings', {
      method: 'PATCH',
      url: '/v1/settings',
      payload: { category_hourly_rates: { ops: 70 }, fallback_baseline_minutes: 5 },
    });
    expect(patched.json()).toMatchObject({
      category_hourly_rates: { ops: 70 },
      fallback_baseline_minutes: 5,
    });
    expect(
      (await call('/v1/settings', { method: 'PATCH', url: '/v1/settings', payload: { nope: 1 } })).statusCode,
    ).toBe(422);

    // Reports, as JSON and as CSV
    for (const path of ['/v1/reports/time-saved', '/v1/reports/cost-saved', '/v1/reports/leaderboard']) {
      expect((await call(path, { method: 'GET', url: `${path}?period=30d` })).statusCode).toBe(200);
      expect((await call(path, { method: 'GET', url: `${path}?format=csv` })).statusCode).toBe(200);
      expect((await call(path, { method: 'GET', url: `${path}?period=1y` })).statusCode).toBe(422);
      expect((await call(path, { method: 'GET', url: path, apiKey: free.apiKey })).statusCode).toBe(403);
    }
    expect(
      (await call('/v1/reports/export', { method: 'GET', url: '/v1/reports/export?group_by=agent' }))
        .statusCode,
    ).toBe(200);
    expect(
      (await call('/v1/reports/export', { method: 'GET', url: '/v1/reports/export?group_by=nope' }))
        .statusCode,
    ).toBe(422);
    expect((await call('/v1/reports/usage', { method: 'GET', url: '/v1/reports/usage' })).statusCode).toBe(
      200,
    );
    expect(
      (await call('/v1/reports/usage', { method: 'GET', url: '/v1/reports/usage?x=1' })).statusCode,
    ).toBe(422);

    // Webhooks and deliveries
    const hook = { url: 'http://127.0.0.1:9/hook', event_types: ['event.created'] };
    const created = await call('/v1/webhooks', { method: 'POST', url: '/v1/webhooks', payload: hook });
    expect(created.statusCode).toBe(201);
    const { id, secret } = created.json<{ id: string; secret: string }>();
    expect(secret).toMatch(/^whsec_/);
    expect(
      (await call('/v1/webhooks', { method: 'POST', url: '/v1/webhooks', payload: { url: '' } })).statusCode,
    ).toBe(422);
    expect((await call('/v1/webhooks', { method: 'GET', url: '/v1/webhooks' })).statusCode).toBe(200);
    expect((await call('/v1/webhooks', { method: 'GET', url: '/v1/webhooks?limit=101' })).statusCode).toBe(
      422,
    );
    const one = '/v1/webhooks/{id}';
    expect((await call(one, { method: 'GET', url: `/v1/webhooks/${id}` })).statusCode).toBe(200);
    expect((await call(one, { method: 'GET', url: '/v1/webhooks/wh_nope' })).statusCode).toBe(404);
    expect(
      (await call(one, { method: 'PATCH', url: `/v1/webhooks/${id}`, payload: { description: 'x' } }))
        .statusCode,
    ).toBe(200);
    expect(
      (await call(one, { method: 'PATCH', url: `/v1/webhooks/${id}`, payload: { status: 'failing' } }))
        .statusCode,
    ).toBe(422);
    expect(
      (await call('/v1/webhooks/{id}/test', { method: 'POST', url: `/v1/webhooks/${id}/test` })).statusCode,
    ).toBe(202);
    expect(
      (await call('/v1/webhooks/{id}/test', { method: 'POST', url: '/v1/webhooks/wh_nope/test' })).statusCode,
    ).toBe(404);
    const deliveries = '/v1/webhooks/{id}/deliveries';
    expect((await call(deliveries, { method: 'GET', url: `/v1/webhooks/${id}/deliveries` })).statusCode).toBe(
      200,
    );
    expect(
      (await call(deliveries, { method: 'GET', url: '/v1/webhooks/wh_nope/deliveries' })).statusCode,
    ).toBe(404);
    expect((await call(one, { method: 'DELETE', url: `/v1/webhooks/${id}` })).statusCode).toBe(204);
    expect((await call(one, { method: 'DELETE', url: `/v1/webhooks/${id}` })).statusCode).toBe(404);

    // OpenTelemetry: the OTLP endpoint (JSON and protobuf), mapping rules and unresolved runs (in
    // a second of their own: the calls above used up this one's rate)
    h.clock.advance(1000);
    const ended = h.clock.now().getTime();
    const traces = '/v1/traces';
    const spans = {
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                {
                  traceId: '5b8efff798038103d269b633813fc60c',
                  spanId: 'eee19b7ec3c1b174',
                  name: 'invoke_agent',
                  startTimeUnixNano: String((ended - 1000) * 1e6),
                  endTimeUnixNano: String(ended * 1e6),
                  attributes: [{ key: 'gen_ai.operation.name', value: { stringValue: 'invoke_agent' } }],
                },
              ],
            },
          ],
        },
      ],
    };
    expect((await call(traces, { method: 'POST', url: traces, payload: spans })).statusCode).toBe(200);
    expect(
      (
        await call(traces, {
          method: 'POST',
          url: traces,
          payload: Buffer.alloc(0),
          headers: { 'content-type': 'application/x-protobuf' },
        })
      ).statusCode,
    ).toBe(200);
    expect(
      (
        await call(traces, {
          method: 'POST',
          url: traces,
          payload: '{"resourceSpans": 1}',
          headers: { 'content-type': 'application/json' },
        })
      ).statusCode,
    ).toBe(400);
    expect(
      (
        await call(traces, {
          method: 'POST',
          url: traces,
          payload: Buffer.from([0xff]),
          headers: { 'content-type': 'application/x-protobuf' },
        })
      ).statusCode,
    ).toBe(400);
    const mappings = '/v1/otlp/mappings';
    const rule = { kind: 'task_type', field: 'agent_name', value: 'a', task_type: 'dev_bug_fix' };
    const added = await call(mappings, { method: 'POST', url: mappings, payload: rule });
    expect(added.statusCode).toBe(201);
    expect(
      (await call(mappings, { method: 'POST', url: mappings, payload: { kind: 'nope' } })).statusCode,
    ).toBe(422);
    expect((await call(mappings, { method: 'GET', url: mappings })).statusCode).toBe(200);
    expect((await call(mappings, { method: 'GET', url: mappings, apiKey: null })).statusCode).toBe(401);
    const mapping = '/v1/otlp/mappings/{id}';
    const ruleId = added.json<{ id: string }>().id;
    expect((await call(mapping, { method: 'DELETE', url: `${mappings}/${ruleId}` })).statusCode).toBe(204);
    expect((await call(mapping, { method: 'DELETE', url: `${mappings}/${ruleId}` })).statusCode).toBe(404);
    const runs = '/v1/otlp/unresolved-runs';
    const listed = await call(runs, { method: 'GET', url: runs });
    expect(listed.statusCode).toBe(200);
    expect((await call(runs, { method: 'GET', url: `${runs}?limit=0` })).statusCode).toBe(422);
    const retry = '/v1/otlp/unresolved-runs/retry';
    expect((await call(retry, { method: 'POST', url: retry })).statusCode).toBe(200);
    expect((await call(retry, { method: 'POST', url: retry, apiKey: null })).statusCode).toBe(401);
    const run = '/v1/otlp/unresolved-runs/{id}';
    const [unresolved] = listed.json<{ data: { id: string }[] }>().data;
    expect((await call(run, { method: 'DELETE', url: `${runs}/${unresolved?.id}` })).statusCode).toBe(204);
    expect((await call(run, { method: 'DELETE', url: `${runs}/${unresolved?.id}` })).statusCode).toBe(404);
    // Forecasts, budgets, fixed costs and payback (a second later: each key's rate is per second)
    h.clock.advance(1000);
    const get = (path: string, url: string, apiKey?: string) =>
      call(path, { method: 'GET', url, ...(apiKey ? { apiKey } : {}) });
    expect((await get('/v1/reports/forecast', '/v1/reports/forecast?agent_id=bot-1')).statusCode).toBe(200);
    expect((await get('/v1/reports/forecast', '/v1/reports/forecast?period=7d')).statusCode).toBe(422);
    expect((await get('/v1/reports/payback', '/v1/reports/payback?period=30d')).statusCode).toBe(200);
    expect((await get('/v1/reports/payback', '/v1/reports/payback', free.apiKey)).statusCode).toBe(403);
    const budget = await call('/v1/budgets', {
      method: 'POST',
      url: '/v1/budgets',
      payload: { name: 'All', scope: 'org', amount: 100 },
    });
    expect(budget.statusCode).toBe(201);
    expect(
      (await call('/v1/budgets', { method: 'POST', url: '/v1/budgets', payload: { name: 'x' } })).statusCode,
    ).toBe(422);
    expect((await get('/v1/budgets', '/v1/budgets')).statusCode).toBe(200);
    expect((await get('/v1/budgets', '/v1/budgets', free.apiKey)).statusCode).toBe(403);
    const budgetId = budget.json<{ id: string }>().id;
    const oneBudget = '/v1/budgets/{id}';
    expect((await get(oneBudget, `/v1/budgets/${budgetId}`)).statusCode).toBe(200);
    expect((await get(oneBudget, '/v1/budgets/bud_nope')).statusCode).toBe(404);
    const patchBudget = (payload: object) =>
      call(oneBudget, { method: 'PATCH', url: `/v1/budgets/${budgetId}`, payload });
    expect((await patchBudget({ amount: 50 })).statusCode).toBe(200);
    expect((await patchBudget({ amount: -1 })).statusCode).toBe(422);
    expect((await call(oneBudget, { method: 'DELETE', url: `/v1/budgets/${budgetId}` })).statusCode).toBe(
      204,
    );
    expect((await call(oneBudget, { method: 'DELETE', url: `/v1/budgets/${budgetId}` })).statusCode).toBe(
      404,
    );
    h.clock.advance(1000);
    const cost = await call('/v1/fixed-costs', {
      method: 'POST',
      url: '/v1/fixed-costs',
      payload: { name: 'Licence', kind: 'monthly', amount: 100, start_month: '2026-09' },
    });
    expect(cost.statusCode).toBe(201);
    expect(
      (await call('/v1/fixed-costs', { method: 'POST', url: '/v1/fixed-costs', payload: { kind: 'x' } }))
        .statusCode,
    ).toBe(422);
    expect((await get('/v1/fixed-costs', '/v1/fixed-costs')).statusCode).toBe(200);
    expect((await get('/v1/fixed-costs', '/v1/fixed-costs?limit=0')).statusCode).toBe(422);
    const costId = cost.json<{ id: string }>().id;
    const oneCost = '/v1/fixed-costs/{id}';
    expect((await get(oneCost, `/v1/fixed-costs/${costId}`)).statusCode).toBe(200);
    expect((await get(oneCost, '/v1/fixed-costs/fc_nope')).statusCode).toBe(404);
    const patchCost = (payload: object) =>
      call(oneCost, { method: 'PATCH', url: `/v1/fixed-costs/${costId}`, payload });
    expect((await patchCost({ end_month: '2026-12' })).statusCode).toBe(200);
    expect((await patchCost({ end_month: '2026-01' })).statusCode).toBe(422);
    expect((await call(oneCost, { method: 'DELETE', url: `/v1/fixed-costs/${costId}` })).statusCode).toBe(
      204,
    );
    expect((await call(oneCost, { method: 'DELETE', url: `/v1/fixed-costs/${costId}` })).statusCode).toBe(
      404,
    );

    // Report e-mail schedules
    h.clock.advance(1000);
    const schedules = '/v1/report-schedules';
    const schedule = await call(schedules, {
      method: 'POST',
      url: schedules,
      payload: { frequency: 'weekly', recipients: ['cfo@acme.test'] },
    });
    expect(schedule.statusCode).toBe(201);
    expect(
      (await call(schedules, { method: 'POST', url: schedules, payload: { frequency: 'daily' } })).statusCode,
    ).toBe(422);
    expect((await get(schedules, schedules)).statusCode).toBe(200);
    expect((await get(schedules, schedules, free.apiKey)).statusCode).toBe(403);
    const scheduleId = schedule.json<{ id: string }>().id;
    const oneSchedule = '/v1/report-schedules/{id}';
    expect((await get(oneSchedule, `${schedules}/${scheduleId}`)).statusCode).toBe(200);
    expect((await get(oneSchedule, `${schedules}/rsch_nope`)).statusCode).toBe(404);
    const patchSchedule = (payload: object) =>
      call(oneSchedule, { method: 'PATCH', url: `${schedules}/${scheduleId}`, payload });
    expect((await patchSchedule({ frequency: 'monthly' })).statusCode).toBe(200);
    expect((await patchSchedule({ recipients: [] })).statusCode).toBe(422);
    const sendNow = '/v1/report-schedules/{id}/send';
    expect((await call(sendNow, { method: 'POST', url: `${schedules}/${scheduleId}/send` })).statusCode).toBe(
      202,
    );
    expect((await call(sendNow, { method: 'POST', url: `${schedules}/rsch_nope/send` })).statusCode).toBe(
      404,
    );
    const deleteSchedule = { method: 'DELETE' as const, url: `${schedules}/${scheduleId}` };
    expect((await call(oneSchedule, deleteSchedule)).statusCode).toBe(204);
    expect((await call(oneSchedule, deleteSchedule)).statusCode).toBe(404);

    // Closed months
    h.clock.advance(1000);
    const close = '/v1/periods/{month}/close';
    const reopen = '/v1/periods/{month}/reopen';
    const post = (path: string, url: string, payload: object) => call(path, { method: 'POST', url, payload });
    expect((await post(close, '/v1/periods/2026-09/close', { reason: 'books' })).statusCode).toBe(201);
    expect((await post(close, '/v1/periods/2026-09/close', { reason: 'again' })).statusCode).toBe(422);
    expect((await get('/v1/periods', '/v1/periods')).statusCode).toBe(200);
    expect((await get('/v1/periods', '/v1/periods', free.apiKey)).statusCode).toBe(403);
    for (const [path, url] of [
      ['/v1/periods/{month}', '/v1/periods/2026-09'],
      ['/v1/periods/{month}/statement.csv', '/v1/periods/2026-09/statement.csv'],
      ['/v1/periods/{month}/statements', '/v1/periods/2026-09/statements'],
      ['/v1/periods/{month}/changes', '/v1/periods/2026-09/changes'],
    ] as const) {
      expect((await get(path, url)).statusCode).toBe(200);
      expect((await get(path, url.replace('2026-09', '2026-08'))).statusCode).toBe(404);
    }
    // Reopening needs the owner role; an admin key acts as an admin (docs/people.md, the matrix).
    const refused = await post(reopen, '/v1/periods/2026-09/reopen', { reason: 'fix' });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('insufficient_role');
    expect((await post(reopen, '/v1/periods/2026-09/reopen', {})).statusCode).toBe(422);

    // Members and invitations
    h.clock.advance(1000);
    const invitations = '/v1/invitations';
    const invite = (payload: object) => call(invitations, { method: 'POST', url: invitations, payload });
    const invited = await invite({ email: 'ana@example.com', role: 'analyst' });
    expect(invited.statusCode).toBe(201);
    expect((await invite({ email: 'ana@example.com', role: 'admin' })).statusCode).toBe(200);
    expect((await invite({ email: 'ana@example.com', role: 'king' })).statusCode).toBe(422);
    expect((await get(invitations, invitations)).statusCode).toBe(200);
    expect((await get(invitations, `${invitations}?status=lost`)).statusCode).toBe(422);
    const invitationId = invited.json<{ id: string }>().id;
    const oneInvitation = '/v1/invitations/{id}';
    expect((await get(oneInvitation, `${invitations}/${invitationId}`)).statusCode).toBe(200);
    expect((await get(oneInvitation, `${invitations}/inv_nope`)).statusCode).toBe(404);
    const resend = '/v1/invitations/{id}/resend';
    expect(
      (await call(resend, { method: 'POST', url: `${invitations}/${invitationId}/resend` })).statusCode,
    ).toBe(200);
    expect((await call(resend, { method: 'POST', url: `${invitations}/inv_nope/resend` })).statusCode).toBe(
      404,
    );
    const revoke = { method: 'DELETE' as const, url: `${invitations}/${invitationId}` };
    expect((await call(oneInvitation, revoke)).statusCode).toBe(200);
    expect((await call(oneInvitation, { ...revoke, url: `${invitations}/inv_nope` })).statusCode).toBe(404);
    const person = await createAccount({ ctx: h.ctx, email: 'member@example.com' });
    await addMembership({ ctx: h.ctx, orgId: h.org.id, accountId: person.id, role: 'analyst' });
    const members = '/v1/members';
    expect((await get(members, members)).statusCode).toBe(200);
    expect((await get(members, `${members}?limit=0`)).statusCode).toBe(422);
    const oneMember = '/v1/members/{account_id}';
    expect((await get(oneMember, `${members}/${person.id}`)).statusCode).toBe(200);
    expect((await get(oneMember, `${members}/acct_nope`)).statusCode).toBe(404);
    const patchMember = (payload: object) =>
      call(oneMember, { method: 'PATCH', url: `${members}/${person.id}`, payload });
    expect((await patchMember({ role: 'admin' })).statusCode).toBe(200);
    expect((await patchMember({ role: 'owner' })).statusCode).toBe(403);
    const removeMember = { method: 'DELETE' as const, url: `${members}/${person.id}` };
    expect((await call(oneMember, removeMember)).statusCode).toBe(204);
    expect((await call(oneMember, removeMember)).statusCode).toBe(404);

    // Single sign-on (Enterprise)
    const enterprise = await h.createOrg({ plan: 'enterprise' });
    const sso = (method: 'GET' | 'PUT' | 'DELETE', payload?: object, apiKey = enterprise.apiKey) =>
      call('/v1/sso', { method, url: '/v1/sso', apiKey, ...(payload ? { payload } : {}) });
    expect((await sso('GET')).statusCode).toBe(404);
    expect((await sso('GET', undefined, free.apiKey)).statusCode).toBe(403);
    const ssoBody = {
      issuer: 'https://login.example.com',
      client_id: 'tally',
      client_secret: 'secret',
      allowed_domains: ['example.com'],
    };
    expect((await sso('PUT', { ...ssoBody, issuer: 'http://login.example.com' })).statusCode).toBe(422);
    expect((await sso('PUT', ssoBody)).statusCode).toBe(200);
    expect((await sso('GET')).statusCode).toBe(200);
    expect((await sso('DELETE')).statusCode).toBe(204);
    expect((await sso('DELETE')).statusCode).toBe(404);

    // Assumption history and restatements
    h.clock.advance(1000);
    const history = '/v1/assumptions/history';
    expect((await get(history, `${history}?kind=outcome_credit`)).statusCode).toBe(200);
    expect((await get(history, `${history}?limit=0`)).statusCode).toBe(422);
    const change = { kind: 'default_hourly_rate', value: 70, effective_from: '2026-01-01' };
    const preview = '/v1/restatements/preview';
    expect((await call(preview, { method: 'POST', url: preview, payload: change })).statusCode).toBe(200);
    expect(
      (await call(preview, { method: 'POST', url: preview, payload: { ...change, value: null } })).statusCode,
    ).toBe(422);
    const restate = '/v1/restatements';
    const restated = await call(restate, {
      method: 'POST',
      url: restate,
      payload: { ...change, reason: 'study' },
    });
    expect(restated.statusCode).toBe(201);
    expect((await call(restate, { method: 'POST', url: restate, payload: change })).statusCode).toBe(422);
    const oneRestatement = '/v1/restatements/{restatement_id}';
    expect((await get(oneRestatement, `${restate}/${restated.json().id}`)).statusCode).toBe(200);
    expect((await get(oneRestatement, `${restate}/rst_none`)).statusCode).toBe(404);

    // Every operation answered at least one success and one error; reopening a month needs the
    // owner role, which no API key holds, so its success is the dashboard's and the CLI's
    // (test/periods/).
    const seen = checker.seen();
    const ownersOnly = new Set(['reopenPeriod']);
    for (const item of Object.values(doc.paths)) {
      for (const { operationId } of Object.values(item)) {
        const statuses = [...(seen.get(operationId) ?? [])];
        expect(
          statuses.some((s) => s < '400'),
          `${operationId} success`,
        ).toBe(!ownersOnly.has(operationId));
        expect(
          statuses.some((s) => s >= '400'),
          `${operationId} error`,
        ).toBe(true);
      }
    }
  });
});
