import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MappingRule } from '../../src/otlp/rules.js';
import type { UnresolvedRun } from '../../src/otlp/unresolved.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';
import { agentRun, exportRequest, type JsonSpan } from './otlp-json.js';
import { listEvents } from './support.js';

describe.each(ENGINES)('mapping rules and unresolved runs (%s)', (engine) => {
  let h: Harness;
  const now = () => h.clock.now().getTime();
  const send = (spans: JsonSpan[], resource?: Record<string, string>) =>
    h.request({ method: 'POST', url: '/v1/traces', payload: exportRequest(spans, resource) });
  const addRule = (payload: Record<string, unknown>) =>
    h.request({ method: 'POST', url: '/v1/otlp/mappings', payload });
  const unresolved = async () =>
    (await h.request({ method: 'GET', url: '/v1/otlp/unresolved-runs' })).json<{ data: UnresolvedRun[] }>()
      .data;

  beforeAll(async () => {
    h = await createHarness(engine, { now: new Date().toISOString(), rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  it('creates, lists in the order tried, and deletes rules', async () => {
    const span = await addRule({
      kind: 'task_type',
      field: 'span_name',
      value: 'invoke_agent triage',
      task_type: 'support_ticket_triage',
    });
    const agent = await addRule({
      kind: 'task_type',
      field: 'agent_name',
      value: 'triage-bot',
      task_type: 'support_ticket_triage',
    });
    const resource = await addRule({
      kind: 'task_type',
      field: 'resource_attribute',
      attribute: 'service.name',
      value: 'triage-service',
      task_type: 'support_ticket_triage',
    });
    for (const res of [span, agent, resource]) expect(res.statusCode, res.body).toBe(201);
    expect(agent.json()).toMatchObject({
      id: expect.stringMatching(/^map_/),
      kind: 'task_type',
      field: 'agent_name',
      attribute: null,
      value: 'triage-bot',
      task_type: 'support_ticket_triage',
      resolved_runs: 0,
    });
    const list = (await h.request({ method: 'GET', url: '/v1/otlp/mappings' })).json<{
      data: MappingRule[];
    }>().data;
    expect(list.map((r) => r.field)).toEqual(['agent_name', 'span_name', 'resource_attribute']);
    const id = span.json<MappingRule>().id;
    expect((await h.request({ method: 'DELETE', url: `/v1/otlp/mappings/${id}` })).statusCode).toBe(204);
    expect((await h.request({ method: 'DELETE', url: `/v1/otlp/mappings/${id}` })).statusCode).toBe(404);
    for (const r of [agent, resource]) {
      await h.request({ method: 'DELETE', url: `/v1/otlp/mappings/${r.json<MappingRule>().id}` });
    }
  });

  it('refuses invalid rules with 422 naming the field', async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ kind: 'task_type', field: 'agent_name', value: 'x' }, '/body/task_type', 'validation_error'],
      [
        { kind: 'task_type', field: 'agent_name', task_type: 'dev_bug_fix' },
        '/body/value',
        'validation_error',
      ],
      [
        { kind: 'task_type', field: 'resource_attribute', value: 'x', task_type: 'dev_bug_fix' },
        '/body/attribute',
        'validation_error',
      ],
      [
        { kind: 'task_type', field: 'agent_name', attribute: 'a', value: 'x', task_type: 'dev_bug_fix' },
        '/body/attribute',
        'validation_error',
      ],
      [
        { kind: 'task_type', field: 'agent_name', value: 'x', task_type: 'no_such_type' },
        '/body/task_type',
        'unknown_task_type',
      ],
      [{ kind: 'client_id' }, '/body/attribute', 'validation_error'],
      [{ kind: 'client_id', attribute: 'tenant.id', value: 'x' }, '/body/value', 'validation_error'],
      [
        { kind: 'task_type', field: 'model', value: 'x', task_type: 'dev_bug_fix' },
        '/body/field',
        'validation_error',
      ],
      [
        { kind: 'task_type', field: 'agent_name', value: 'x', task_type: 'dev_bug_fix', extra: 1 },
        '/body/extra',
        'validation_error',
      ],
    ];
    for (const [payload, path, code] of cases) {
      const res = await addRule(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json()).toMatchObject({
        error: { code, details: expect.arrayContaining([expect.objectContaining({ path })]) },
      });
    }
    const first = await addRule({
      kind: 'task_type',
      field: 'agent_name',
      value: 'twin',
      task_type: 'dev_bug_fix',
    });
    expect(first.statusCode).toBe(201);
    const twin = await addRule({
      kind: 'task_type',
      field: 'agent_name',
      value: 'twin',
      task_type: 'dev_code_review',
    });
    expect(twin.statusCode).toBe(422);
    await h.request({ method: 'DELETE', url: `/v1/otlp/mappings/${first.json<MappingRule>().id}` });
  });

  it('lists a run without a task type, and tracks it once a rule is added for it', async () => {
    const run = agentRun({ endMs: now(), agent: { 'gen_ai.agent.name': 'unmapped-bot' } });
    const res = await send(run.all, { 'service.name': 'unmapped-service' });
    expect(res.json()).toMatchObject({ partialSuccess: { rejectedSpans: '2' } });
    // Sent again (an exporter retry), it is listed once.
    await send(run.all, { 'service.name': 'unmapped-service' });
    const listed = (await unresolved()).filter((r) => r.agent_id === 'unmapped-bot');
    expect(listed).toEqual([
      expect.objectContaining({
        trace_id: run.root.traceId,
        span_id: run.root.spanId,
        agent_name: 'unmapped-bot',
        service_name: 'unmapped-service',
        span_name: 'invoke_agent',
        task_type: null,
        reason: expect.stringContaining('no task type'),
      }),
    ]);
    expect((await listEvents(h)).filter((e) => e.agent_id === 'unmapped-bot')).toHaveLength(0);
    const metrics = (await h.request({ method: 'GET', url: '/metrics', apiKey: null })).body;
    expect(metrics).toMatch(/^tally_otlp_unresolved_runs [1-9]/m);
    expect(metrics).toMatch(/^tally_otlp_runs_total\{result="unresolved"\} [1-9]/m);

    const rule = await addRule({
      kind: 'task_type',
      field: 'agent_name',
      value: 'unmapped-bot',
      task_type: 'data_entry_record',
    });
    expect(rule.json()).toMatchObject({ resolved_runs: 1 });
    expect((await unresolved()).filter((r) => r.agent_id === 'unmapped-bot')).toHaveLength(0);
    const [event] = (await listEvents(h)).filter((e) => e.agent_id === 'unmapped-bot');
    expect(event).toMatchObject({
      task_type: 'data_entry_record',
      tokens_in: 1000,
      occurred_at: new Date(run.root.endMs).toISOString(),
    });
    // Later runs of that agent resolve at once.
    await send(agentRun({ endMs: now(), agent: { 'gen_ai.agent.name': 'unmapped-bot' } }).all);
    expect((await listEvents(h)).filter((e) => e.agent_id === 'unmapped-bot')).toHaveLength(2);
  });

  it('keeps a run whose tally.task_type is unknown until the type exists, then retries on demand', async () => {
    await send(
      agentRun({
        endMs: now(),
        agent: { 'gen_ai.agent.name': 'future-bot', 'tally.task_type': 'invoice_matching' },
      }).all,
    );
    const [listed] = (await unresolved()).filter((r) => r.agent_id === 'future-bot');
    expect(listed).toMatchObject({
      task_type: 'invoice_matching',
      reason: expect.stringContaining('invoice_matching'),
    });
    const created = await h.request({
      method: 'POST',
      url: '/v1/task-types',
      payload: {
        key: 'invoice_matching',
        display_name: 'Match an invoice',
        category: 'ops',
        default_baseline_minutes: 9,
      },
    });
    expect(created.statusCode).toBe(201);
    const retried = await h.request({ method: 'POST', url: '/v1/otlp/unresolved-runs/retry' });
    expect(retried.json()).toEqual({ resolved_runs: 1 });
    expect((await listEvents(h)).filter((e) => e.agent_id === 'future-bot')[0]).toMatchObject({
      task_type: 'invoice_matching',
    });
  });

  it('dismisses an unresolved run', async () => {
    await send(agentRun({ endMs: now(), agent: { 'gen_ai.agent.name': 'dismissed-bot' } }).all);
    const [run] = (await unresolved()).filter((r) => r.agent_id === 'dismissed-bot');
    expect(
      (await h.request({ method: 'DELETE', url: `/v1/otlp/unresolved-runs/${run?.id}` })).statusCode,
    ).toBe(204);
    expect((await unresolved()).filter((r) => r.agent_id === 'dismissed-bot')).toHaveLength(0);
    expect(
      (await h.request({ method: 'DELETE', url: `/v1/otlp/unresolved-runs/${run?.id}` })).statusCode,
    ).toBe(404);
  });

  it("keeps organisations' rules and runs apart", async () => {
    const other = await h.createOrg();
    await h.request({
      method: 'POST',
      url: '/v1/traces',
      apiKey: other.apiKey,
      payload: exportRequest(agentRun({ endMs: now(), agent: { 'gen_ai.agent.name': 'other-org-bot' } }).all),
    });
    expect((await unresolved()).filter((r) => r.agent_id === 'other-org-bot')).toHaveLength(0);
    const mine = (await h.request({ method: 'GET', url: '/v1/otlp/mappings' })).json<{
      data: MappingRule[];
    }>().data;
    const theirs = await h.request({ method: 'GET', url: '/v1/otlp/mappings', apiKey: other.apiKey });
    expect(theirs.json()).toEqual({ data: [] });
    const id = mine[0]?.id ?? 'map_none';
    expect(
      (await h.request({ method: 'DELETE', url: `/v1/otlp/mappings/${id}`, apiKey: other.apiKey }))
        .statusCode,
    ).toBe(404);
  });

  it('records rule changes in the audit log', async () => {
    const log = await h.request({ method: 'GET', url: '/v1/audit-log' });
    const actions = log.json<{ data: { action: string }[] }>().data.map((a) => a.action);
    expect(actions).toEqual(expect.arrayContaining(['otlp_mapping.created', 'otlp_mapping.deleted']));
  });
});
