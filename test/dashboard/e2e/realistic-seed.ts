import { createApiKey } from '../../../src/orgs/api-keys.js';
import type { Harness } from '../../support/harness.js';

/**
 * A believable organisation for the screenshots (the README shows one): five agents, each with
 * the work it would really do, clients, a custom task type and an override, over 90 days with
 * weekday volume growing. Deterministic: a seeded generator, no Math.random, no wall clock.
 */

interface AgentProfile {
  id: string;
  /** Events on an average weekday at the start of the 90 days. */
  perDay: number;
  tasks: Array<[key: string, weight: number]>;
  run: (r: () => number) => Record<string, unknown>;
}

const model = (name: string, tokensIn: number, tokensOut: number) => (r: () => number) => ({
  model: name,
  tokens_in: Math.round(tokensIn * (0.6 + r() * 0.8)),
  tokens_out: Math.round(tokensOut * (0.6 + r() * 0.8)),
});
const cost = (euros: number) => (r: () => number) => ({
  agent_cost: Math.round(euros * (0.7 + r() * 0.6) * 100) / 100,
});

const AGENTS: AgentProfile[] = [
  {
    id: 'support-bot',
    perDay: 9,
    tasks: [
      ['support_ticket_triage', 5],
      ['support_ticket_reply', 6],
      ['support_ticket_resolution', 3],
      ['support_faq_answer', 4],
      ['support_refund_request', 1],
    ],
    // Retrieval and tools cost more than the tokens of the reply.
    run: cost(0.35),
  },
  {
    id: 'contract-reviewer',
    perDay: 2,
    tasks: [
      ['legal_contract_review', 3],
      ['legal_nda_review', 4],
      ['legal_clause_extraction', 2],
    ],
    run: model('o1', 40_000, 8_000),
  },
  {
    id: 'invoice-agent',
    perDay: 5,
    tasks: [
      ['ops_invoice_processing', 7],
      ['ops_expense_review', 3],
      ['reconcile_bank_statement', 1],
    ],
    run: cost(0.6),
  },
  {
    id: 'research-agent',
    perDay: 2,
    tasks: [
      ['research_web_search_summary', 5],
      ['research_competitor_profile', 1],
      ['research_fact_check', 3],
    ],
    run: cost(2.5),
  },
  {
    id: 'sales-assistant',
    perDay: 4,
    tasks: [
      ['sales_lead_qualification', 3],
      ['sales_outreach_email', 5],
      ['sales_call_summary', 2],
    ],
    run: model('gpt-4o', 8_000, 1_200),
  },
];

const CLIENTS: Array<[string | null, number]> = [
  ['northwind', 5],
  ['globex', 4],
  ['initech', 3],
  ['umbrella', 2],
  ['hooli', 1],
  [null, 2],
];

/** mulberry32: a small seeded generator, the same numbers on every run. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(r: () => number, weighted: Array<[T, number]>): T {
  const total = weighted.reduce((s, [, w]) => s + w, 0);
  let x = r() * total;
  for (const [value, w] of weighted) {
    x -= w;
    if (x < 0) return value;
  }
  return (weighted[weighted.length - 1] as [T, number])[0];
}

async function call(h: Harness, method: 'POST' | 'PATCH', url: string, payload: object): Promise<void> {
  h.clock.advance(1000);
  const res = await h.request({ method, url, payload });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
}

export async function seedRealistic(h: Harness, days = 90): Promise<number> {
  await call(h, 'PATCH', '/v1/settings', {
    name: 'Acme Logistics',
    default_hourly_rate: 48,
    category_hourly_rates: { legal: 140, sales: 65 },
    admin_emails: ['finance@acme-logistics.example', 'ops@acme-logistics.example'],
  });
  // Each agent tracks with an ingest key of its own.
  for (const agent of ['support-bot', 'contract-reviewer', 'invoice-agent'])
    await createApiKey({ ctx: h.ctx, orgId: h.org.id, name: agent, scope: 'ingest' });
  await call(h, 'POST', '/v1/task-types', {
    key: 'reconcile_bank_statement',
    display_name: 'Reconcile a bank statement',
    category: 'ops',
    default_baseline_minutes: 40,
    baseline_source: 'Finance team time study, Q2',
  });
  await call(h, 'POST', '/v1/task-types/support_ticket_reply/override', {
    baseline_minutes_override: 10,
    reason: 'Measured in our Q3 support time study',
  });

  const r = generator(20261120);
  const now = h.clock.now().getTime();
  // What the per-event figures leave out: building the agents at the start, a platform licence
  // since; and a budget on the agents' monthly spend.
  const start = new Date(now - (days - 1) * 86_400_000).toISOString();
  await call(h, 'POST', '/v1/fixed-costs', {
    name: 'Building the agents',
    kind: 'one_off',
    amount: 18000,
    date: start.slice(0, 10),
  });
  await call(h, 'POST', '/v1/fixed-costs', {
    name: 'Agent platform licence',
    kind: 'monthly',
    amount: 900,
    start_month: start.slice(0, 7),
  });
  await call(h, 'POST', '/v1/budgets', { name: 'Agent spend', scope: 'org', amount: 600 });
  const events: Array<Record<string, unknown>> = [];
  for (let d = days - 1; d >= 0; d--) {
    const dayStart = Math.floor(now / 86_400_000) * 86_400_000 - d * 86_400_000;
    const weekday = new Date(dayStart).getUTCDay();
    const weekend = weekday === 0 || weekday === 6;
    // Adoption grows over the quarter; weekends are quiet.
    const growth = 0.7 + (0.6 * (days - 1 - d)) / Math.max(1, days - 1);
    for (const agent of AGENTS) {
      const expected = agent.perDay * growth * (weekend ? 0.25 : 1);
      const n = Math.max(0, Math.round(expected * (0.6 + r() * 0.8)));
      for (let i = 0; i < n; i++) {
        // Office hours, 07:00 to 19:00 UTC; today's events stay before the clock.
        const at = dayStart + (7 + r() * 12) * 3_600_000;
        if (at >= now) continue;
        const client = pick(r, CLIENTS);
        const roll = r();
        events.push({
          agent_id: agent.id,
          task_type: pick(r, agent.tasks),
          outcome: roll < 0.86 ? 'success' : roll < 0.96 ? 'needs_review' : 'failure',
          occurred_at: new Date(Math.floor(at / 1000) * 1000).toISOString(),
          agent_duration_seconds: Math.round(20 + r() * 400),
          ...agent.run(r),
          ...(client === null ? {} : { metadata: { client_id: client } }),
        });
      }
    }
  }
  // Agents report as they finish, so the events arrive in the order they happened.
  events.sort((a, b) => String(a.occurred_at).localeCompare(String(b.occurred_at)));
  for (let i = 0; i < events.length; i += 100) {
    // Each event counts toward the key's per-second track rate.
    h.clock.advance(1000);
    const res = await h.request({
      method: 'POST',
      url: '/v1/track/batch',
      payload: { events: events.slice(i, i + 100) },
    });
    if (res.statusCode !== 207) throw new Error(`seed failed: ${res.statusCode} ${res.body}`);
    const failed = res.json<{ data: Array<{ status: number }> }>().data.filter((x) => x.status !== 201);
    if (failed.length > 0) throw new Error(`seed events refused: ${JSON.stringify(failed[0])}`);
  }
  return events.length;
}
