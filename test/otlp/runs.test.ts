import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { priceRun } from '../../src/pricing/price-run.js';
import { sweepHeldSpans } from '../../src/otlp/sweeper.js';
import type { StoredEvent } from '../../src/tracking/events.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';
import { agentRun, exportRequest, spanId, traceId, type JsonSpan } from './otlp-json.js';
import { listEvents } from './support.js';

const cost = (model: string, tokensIn: number, tokensOut: number, at: number) =>
  priceRun({ model, tokensIn, tokensOut, at: new Date(at), currency: 'EUR', usdExchangeRate: null })
    ?.agentCostMicros ?? NaN;

describe.each(ENGINES)('from spans to tracked runs (%s)', (engine) => {
  let h: Harness;
  const now = () => h.clock.now().getTime();
  const send = async (spans: JsonSpan[], resource?: Record<string, string>) => {
    const res = await h.request({
      method: 'POST',
      url: '/v1/traces',
      payload: exportRequest(spans, resource),
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ partialSuccess?: { rejectedSpans: string; errorMessage: string } }>();
  };
  const eventsOf = async (agent: string): Promise<StoredEvent[]> =>
    (await listEvents(h)).filter((e) => e.agent_id === agent);

  beforeAll(async () => {
    h = await createHarness(engine, { now: new Date().toISOString(), rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  it('names the agent by gen_ai.agent.id, else gen_ai.agent.name, else the service', async () => {
    const task = { 'tally.task_type': 'data_entry_record' };
    await send(
      agentRun({ endMs: now(), agent: { ...task, 'gen_ai.agent.id': 'agt-7', 'gen_ai.agent.name': 'seven' } })
        .all,
    );
    await send(agentRun({ endMs: now(), agent: { ...task, 'gen_ai.agent.name': 'eight' } }).all);
    await send(agentRun({ endMs: now(), agent: task }).all, { 'service.name': 'nine-service' });
    expect(await eventsOf('agt-7')).toHaveLength(1);
    expect(await eventsOf('seven')).toHaveLength(0);
    expect(await eventsOf('eight')).toHaveLength(1);
    expect(await eventsOf('nine-service')).toHaveLength(1);
  });

  it('takes the outcome from tally.outcome, an error, or a failed evaluation', async () => {
    const base = (agent: string) => ({
      'gen_ai.agent.name': agent,
      'tally.task_type': 'support_ticket_reply',
    });
    const error = agentRun({ endMs: now(), agent: base('status-error-bot') });
    error.root.status = 2;
    await send(error.all);
    await send(agentRun({ endMs: now(), agent: { ...base('error-type-bot'), 'error.type': 'timeout' } }).all);
    const evaluated = agentRun({ endMs: now(), agent: base('evaluated-bot') });
    evaluated.root.events = [
      {
        name: 'gen_ai.evaluation.result',
        attributes: {
          'gen_ai.evaluation.name': 'Relevance',
          'gen_ai.evaluation.score.label': 'not_relevant',
        },
      },
    ];
    await send(evaluated.all);
    const passed = agentRun({ endMs: now(), agent: base('passed-bot') });
    passed.children[0]?.events?.push();
    if (passed.children[0]) {
      passed.children[0].events = [
        {
          name: 'gen_ai.evaluation.result',
          attributes: { 'gen_ai.evaluation.name': 'Relevance', 'gen_ai.evaluation.score.label': 'pass' },
        },
      ];
    }
    await send(passed.all);
    const reviewed = agentRun({
      endMs: now(),
      agent: { ...base('explicit-bot'), 'tally.outcome': 'needs_review' },
    });
    reviewed.root.status = 2;
    await send(reviewed.all);
    expect((await eventsOf('status-error-bot'))[0]?.outcome).toBe('failure');
    expect((await eventsOf('error-type-bot'))[0]?.outcome).toBe('failure');
    expect((await eventsOf('evaluated-bot'))[0]?.outcome).toBe('needs_review');
    expect((await eventsOf('passed-bot'))[0]?.outcome).toBe('success');
    expect((await eventsOf('explicit-bot'))[0]?.outcome).toBe('needs_review');
  });

  it('reads the deprecated names (gen_ai.system, prompt and completion tokens) and prices them', async () => {
    const run = agentRun({
      endMs: now(),
      agent: { 'gen_ai.agent.name': 'legacy-bot', 'tally.task_type': 'support_ticket_reply' },
      calls: [
        {
          'gen_ai.system': 'openai',
          'gen_ai.request.model': 'gpt-4o',
          'gen_ai.usage.prompt_tokens': 2000,
          'gen_ai.usage.completion_tokens': 500,
        },
        {
          'gen_ai.system': 'openai',
          'gen_ai.request.model': 'gpt-4o',
          'gen_ai.usage.prompt_tokens': 1000,
          'gen_ai.usage.completion_tokens': 100,
        },
      ],
    });
    await send(run.all);
    const [event] = await eventsOf('legacy-bot');
    expect(event).toMatchObject({
      tokens_in: 3000,
      tokens_out: 600,
      model: 'openai/gpt-4o',
      resolved_cost_source: 'computed',
      agent_cost: cost('openai/gpt-4o', 3000, 600, run.root.endMs) / 1e6,
    });
  });

  it('does not count twice what the agent span repeats, nor a wrapper of model calls', async () => {
    const run = agentRun({
      endMs: now(),
      agent: {
        'gen_ai.agent.name': 'repeating-bot',
        'tally.task_type': 'support_ticket_reply',
        'gen_ai.usage.input_tokens': 3000,
        'gen_ai.usage.output_tokens': 300,
      },
      calls: [
        {
          'gen_ai.request.model': 'gpt-4o',
          'gen_ai.usage.input_tokens': 1000,
          'gen_ai.usage.output_tokens': 100,
        },
        {
          'gen_ai.request.model': 'gpt-4o',
          'gen_ai.usage.input_tokens': 2000,
          'gen_ai.usage.output_tokens': 200,
        },
      ],
    });
    // A model call wrapping the second one (a retrying client) reports its total too.
    const [, inner] = run.children;
    const wrapper: JsonSpan = {
      traceId: run.root.traceId,
      spanId: spanId(),
      parentSpanId: run.root.spanId,
      name: 'chat',
      startMs: (inner?.startMs ?? 0) - 10,
      endMs: (inner?.endMs ?? 0) + 10,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.usage.input_tokens': 2000,
        'gen_ai.usage.output_tokens': 200,
      },
    };
    if (inner) inner.parentSpanId = wrapper.spanId;
    await send([...run.all, wrapper]);
    expect((await eventsOf('repeating-bot'))[0]).toMatchObject({ tokens_in: 3000, tokens_out: 300 });
    // Without model calls, the agent span's own usage is the run's.
    await send(
      agentRun({
        endMs: now(),
        agent: {
          'gen_ai.agent.name': 'self-reporting-bot',
          'tally.task_type': 'support_ticket_reply',
          'gen_ai.request.model': 'gpt-4o',
          'gen_ai.usage.input_tokens': 700,
          'gen_ai.usage.output_tokens': 70,
        },
        calls: [],
      }).all,
    );
    expect((await eventsOf('self-reporting-bot'))[0]).toMatchObject({
      tokens_in: 700,
      tokens_out: 70,
      model: 'gpt-4o',
    });
  });

  it('prices a run over several models per model, and keeps the breakdown', async () => {
    const run = agentRun({
      endMs: now(),
      agent: { 'gen_ai.agent.name': 'two-model-bot', 'tally.task_type': 'research_fact_check' },
      calls: [
        {
          'gen_ai.provider.name': 'openai',
          'gen_ai.request.model': 'gpt-4o',
          'gen_ai.usage.input_tokens': 5000,
          'gen_ai.usage.output_tokens': 400,
        },
        {
          'gen_ai.provider.name': 'openai',
          'gen_ai.request.model': 'gpt-4o-mini',
          'gen_ai.usage.input_tokens': 1000,
          'gen_ai.usage.output_tokens': 100,
        },
      ],
    });
    await send(run.all);
    const [event] = await eventsOf('two-model-bot');
    const big = cost('openai/gpt-4o', 5000, 400, run.root.endMs);
    const small = cost('openai/gpt-4o-mini', 1000, 100, run.root.endMs);
    expect(event).toMatchObject({
      tokens_in: 6000,
      tokens_out: 500,
      model: 'openai/gpt-4o',
      agent_cost: (big + small) / 1e6,
      resolved_cost_source: 'provided',
      metadata: {
        otel_models: [
          { model: 'openai/gpt-4o', tokens_in: 5000, tokens_out: 400, agent_cost: big / 1e6 },
          { model: 'openai/gpt-4o-mini', tokens_in: 1000, tokens_out: 100, agent_cost: small / 1e6 },
        ],
      },
    });
  });

  it('makes an agent invoked inside another agent part of its run, not a task of its own', async () => {
    const outer = agentRun({
      endMs: now(),
      agent: { 'gen_ai.agent.name': 'orchestrator', 'tally.task_type': 'research_competitor_profile' },
    });
    const inner = agentRun({
      endMs: now() - 2000,
      trace: outer.root.traceId,
      parentSpanId: outer.root.spanId,
      agent: { 'gen_ai.agent.name': 'researcher', 'tally.task_type': 'research_web_search_summary' },
    });
    outer.root.startMs -= 20_000;
    // The inner run comes first, in an export of its own; the outer agent's span last.
    await send(inner.all);
    await send(outer.all);
    expect(await eventsOf('researcher')).toHaveLength(0);
    expect((await eventsOf('orchestrator'))[0]).toMatchObject({ tokens_in: 2000, tokens_out: 200 });
  });

  it('ignores model calls outside any agent run, and takes a span marked tally.task as a run', async () => {
    const t = traceId();
    await send([
      {
        traceId: t,
        spanId: spanId(),
        name: 'chat',
        startMs: now() - 100,
        endMs: now(),
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.request.model': 'gpt-4o',
          'gen_ai.usage.input_tokens': 10,
        },
      },
    ]);
    expect(
      (await listEvents(h)).filter(
        (e) => (e.metadata as { otel_trace_id?: string } | null)?.otel_trace_id === t,
      ),
    ).toHaveLength(0);
    const marked = agentRun({
      endMs: now(),
      agent: {
        'gen_ai.agent.name': 'marked-bot',
        'tally.task': true,
        'tally.task_type': 'ops_expense_review',
      },
    });
    if (marked.root.attributes) marked.root.attributes['gen_ai.operation.name'] = 'handle_expense';
    await send(marked.all);
    expect(await eventsOf('marked-bot')).toHaveLength(1);
  });

  it('takes the client from tally.client_id, or from a resource attribute a rule names', async () => {
    await send(
      agentRun({
        endMs: now(),
        agent: {
          'gen_ai.agent.name': 'client-bot',
          'tally.task_type': 'sales_crm_update',
          'tally.client_id': 'acme',
        },
      }).all,
    );
    const rule = await h.request({
      method: 'POST',
      url: '/v1/otlp/mappings',
      payload: { kind: 'client_id', attribute: 'tenant.id' },
    });
    expect(rule.statusCode).toBe(201);
    await send(
      agentRun({
        endMs: now(),
        agent: { 'gen_ai.agent.name': 'tenant-bot', 'tally.task_type': 'sales_crm_update' },
      }).all,
      {
        'service.name': 'crm-agents',
        'tenant.id': 'globex',
      },
    );
    expect((await eventsOf('client-bot'))[0]?.metadata).toMatchObject({ client_id: 'acme' });
    expect((await eventsOf('tenant-bot'))[0]?.metadata).toMatchObject({ client_id: 'globex' });
    const report = await h.request({
      method: 'GET',
      url: '/v1/reports/time-saved?group_by=client&period=24h',
    });
    const clients = report
      .json<{ rows: { group: { client_id: string | null } }[] }>()
      .rows.map((r) => r.group.client_id);
    expect(clients).toEqual(expect.arrayContaining(['acme', 'globex']));
  });

  it('waits for a local root that is a span without GenAI attributes (an HTTP handler)', async () => {
    const t = traceId();
    const http: JsonSpan = {
      traceId: t,
      spanId: spanId(),
      name: 'POST /support',
      startMs: now() - 20_000,
      endMs: now(),
      attributes: { 'http.request.method': 'POST' },
    };
    const run = agentRun({
      endMs: now() - 1000,
      trace: t,
      parentSpanId: http.spanId,
      agent: { 'gen_ai.agent.name': 'handler-bot', 'tally.task_type': 'support_ticket_reply' },
    });
    await send(run.all);
    expect(await eventsOf('handler-bot')).toHaveLength(0);
    await send([http]);
    expect((await eventsOf('handler-bot'))[0]).toMatchObject({ tokens_in: 1000 });
  });

  it('settles a run whose local root never comes at the bound; a span after its run counts late', async () => {
    const t = traceId();
    const missingParent = spanId();
    const run = agentRun({
      endMs: now(),
      trace: t,
      parentSpanId: missingParent,
      agent: { 'gen_ai.agent.name': 'filtered-parent-bot', 'tally.task_type': 'support_ticket_reply' },
    });
    await send(run.all);
    // A run that was tracked, and a model call of it that comes only afterwards.
    const done = agentRun({
      endMs: now(),
      agent: { 'gen_ai.agent.name': 'punctual-bot', 'tally.task_type': 'support_ticket_reply' },
    });
    await send(done.all);
    await send([{ ...(done.children[0] as JsonSpan), spanId: spanId(), startMs: now() - 100, endMs: now() }]);
    expect(await eventsOf('filtered-parent-bot')).toHaveLength(0);

    h.clock.advance(h.config.otlpHoldSeconds * 1000 + 1);
    const swept = await sweepHeldSpans(h.ctx);
    h.clock.set(new Date().toISOString());
    expect(swept).toMatchObject({ tracked: 1, lateSpans: 1, droppedTraces: 0 });
    expect((await eventsOf('filtered-parent-bot'))[0]).toMatchObject({ tokens_in: 1000 });
    expect(await eventsOf('punctual-bot')).toHaveLength(1);
    const metrics = (await h.request({ method: 'GET', url: '/metrics', apiKey: null })).body;
    expect(metrics).toMatch(/^tally_otlp_late_spans_total 1$/m);
  });
});
