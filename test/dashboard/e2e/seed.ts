import type { Harness } from '../../support/harness.js';

export const XSS_AGENT = '<img src=x onerror=alert(1)>';

const AGENTS = ['support-bot', 'invoice-agent', 'research-agent', 'sales-assistant', XSS_AGENT];
const TASKS = [
  'support_ticket_reply',
  'support_ticket_resolution',
  'ops_invoice_processing',
  'research_web_search_summary',
  'sales_lead_qualification',
];
const CLIENTS = ['acme', 'globex', 'initech', null];
const OUTCOMES = ['success', 'success', 'success', 'needs_review', 'failure'];

/** Deterministic events over the 60 days before the harness clock, tracked through the API. */
export async function seedEvents(h: Harness, apiKey = h.org.apiKey, total = 120): Promise<void> {
  const now = h.clock.now().getTime();
  const events = [];
  for (let i = 0; i < total; i++) {
    const agent = AGENTS[i % AGENTS.length] ?? 'support-bot';
    const client = CLIENTS[(i * 7) % CLIENTS.length] ?? null;
    const at = new Date(now - ((i * 37) % 60) * 86_400_000 - ((i * 13) % 24) * 3_600_000 - 60_000);
    events.push({
      agent_id: agent,
      task_type: TASKS[(i * 3) % TASKS.length] ?? 'support_ticket_reply',
      outcome: OUTCOMES[i % OUTCOMES.length] ?? 'success',
      occurred_at: at.toISOString(),
      ...(i % 4 === 0
        ? { model: 'gpt-4o', tokens_in: 1200 + i * 10, tokens_out: 400 + i }
        : { agent_cost: Math.round((0.05 + (i % 9) * 0.11) * 100) / 100 }),
      ...(client === null ? {} : { metadata: { client_id: client, ticket: `T-${1000 + i}` } }),
    });
  }
  for (let i = 0; i < events.length; i += 100) {
    // Each event counts toward the key's per-second track rate.
    h.clock.advance(1000);
    const res = await h.request({
      method: 'POST',
      url: '/v1/track/batch',
      payload: { events: events.slice(i, i + 100) },
      apiKey,
    });
    if (res.statusCode !== 207) throw new Error(`seed failed: ${res.statusCode} ${res.body}`);
    const failed = res.json<{ data: Array<{ status: number }> }>().data.filter((d) => d.status !== 201);
    if (failed.length > 0) throw new Error(`seed events refused: ${JSON.stringify(failed[0])}`);
  }
}
