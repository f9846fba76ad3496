import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { count, hours, money } from '../../src/dashboard/format.js';
import { page, session } from '../dashboard/support.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { seed, type SeedEvent } from '../reports/seed.js';
import { unlimited } from '../reports/unlimited.js';

// The Periods page's statement and "what changed since closing" show the review columns as the
// Reports page does: only in a table where a row has measured review time.

type Figures = Record<
  'events' | 'hours_saved' | 'cost_saved' | 'agent_cost' | 'net_saved' | 'review_hours' | 'review_cost',
  number
>;
type Keyed = Figures & { agent_id?: string | null; task_type?: string | null; client_id?: string | null };
interface StatementJson {
  totals: Figures;
  by_agent: Keyed[];
  by_task_type: Keyed[];
  by_client: Keyed[];
}
interface ChangesJson {
  statement: Figures;
  entries_total: Figures;
  live: { totals: Figures };
  entries: Array<Figures & { kind: string; cause?: string; event_id: string }>;
}

const REVIEW_HEADERS = ['Review hours', 'Review cost'];

function event(iso: string, agent: string, client: string | null): SeedEvent {
  return {
    agent,
    taskType: 'support_ticket_reply',
    outcome: 'success',
    client,
    occurredAt: Date.parse(iso),
    agentCost: 0.4,
    baselineMinutes: 45,
  };
}

/** A table of the page by id: its header cells and its body rows, as text. */
function table(body: string, id: string): { head: string[]; rows: string[][] } | null {
  const found = new RegExp(`<table id="${id}"[\\s\\S]*?</table>`).exec(body)?.[0];
  if (found === undefined) return null;
  const text = (cell: string | undefined) =>
    (cell ?? '')
      .replace(/<[^>]*>/g, '')
      .replace(/\s+/g, ' ')
      .trim();
  const part = (tag: string) => new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(found)?.[1] ?? '';
  return {
    head: [...part('thead').matchAll(/<th\b[^>]*>([\s\S]*?)<\/th>/g)].map((m) => text(m[1])),
    rows: [...part('tbody').matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((r) =>
      [...(r[1] ?? '').matchAll(/<td\b[^>]*>([\s\S]*?)<\/td>/g)].map((m) => text(m[1])),
    ),
  };
}

const eur = (n: number) => money(n, 'EUR');
const cells = (f: Figures, reviewed: boolean) => [
  count(f.events),
  hours(f.hours_saved),
  eur(f.cost_saved),
  eur(f.agent_cost),
  eur(f.net_saved),
  ...(reviewed ? [hours(f.review_hours), eur(f.review_cost)] : []),
];
const TABLES = [
  ['statement-agents', 'by_agent', 'agent_id'],
  ['statement-task-types', 'by_task_type', 'task_type'],
  ['statement-clients', 'by_client', 'client_id'],
] as const;

describe.each(ENGINES)('the Periods page: review columns (%s)', (engine) => {
  let h: Harness;
  let cookie: string;
  let september: string[];

  const api = async <T>(url: string, payload?: object) => {
    const res = await h.request({ method: payload ? 'POST' : 'GET', url, ...(payload ? { payload } : {}) });
    expect(res.statusCode, `${url}: ${res.body}`).toBeLessThan(300);
    return res.json<T>();
  };
  const review = (eventId: string, minutes: number) =>
    api(`/v1/events/${eventId}/review`, { review_minutes: minutes, verdict: 'accepted' });

  beforeAll(async () => {
    h = await createHarness(engine, { now: '2026-11-20T12:00:00.000Z', rateLimiter: unlimited });
    const ctx = await h.orgCtx();
    september = (
      await seed(ctx, [
        event('2026-09-05T10:00:00Z', 'bot-1', 'acme'),
        event('2026-09-18T10:00:00Z', 'bot-2', null),
      ])
    ).map((e) => e.event_id);
    const october = await seed(ctx, [
      event('2026-10-02T10:00:00Z', 'bot-1', 'acme'),
      event('2026-10-12T10:00:00Z', 'bot-2', 'globex'),
      event('2026-10-28T10:00:00Z', 'bot-3', null),
    ]);
    // October has a reviewed event before its closing; September none.
    h.clock.advance(60_000);
    await review(october[1]?.event_id ?? '', 12);
    h.clock.advance(60_000);
    await api('/v1/periods/2026-09/close', { reason: 'September books' });
    await api('/v1/periods/2026-10/close', { reason: 'October books' });
    cookie = await session(h);
  });
  afterAll(async () => h.close());

  it('shows the review columns in every table of a statement whose month has reviewed events', async () => {
    const statement = await api<StatementJson>('/v1/periods/2026-10');
    expect(statement.totals.review_hours).toBe(0.2);
    const res = await page(h, cookie, '/dashboard/periods/2026-10');
    expect(res.statusCode).toBe(200);
    const totals = table(res.body, 'statement-totals');
    expect(totals?.head.slice(-2)).toEqual(REVIEW_HEADERS);
    expect(totals?.rows).toEqual([['October 2026', ...cells(statement.totals, true)]]);
    for (const [id, list, key] of TABLES) {
      const shown = table(res.body, id);
      expect(shown?.head.slice(-2), id).toEqual(REVIEW_HEADERS);
      expect(shown?.rows, id).toEqual(statement[list].map((r) => [r[key] ?? '(none)', ...cells(r, true)]));
    }
    // The statement is what prints: its tables are not in a part left out of the paper copy.
    expect(res.body).toMatch(/<section class="statement"[\s\S]*id="statement-clients"[\s\S]*<\/section>/);
    // Nothing changed since: the sum carries the statement's review time, and there are no entries.
    const changes = await api<ChangesJson>('/v1/periods/2026-10/changes');
    expect(table(res.body, 'changes-sum')?.rows).toEqual([
      ['Statement', ...cells(changes.statement, true)],
      ['Entries since', ...cells(changes.entries_total, true)],
      ['Live', ...cells(changes.live.totals, true)],
    ]);
    expect(table(res.body, 'changes-entries')).toBeNull();
  });

  it('shows no review columns for a month without reviewed events', async () => {
    const res = await page(h, cookie, '/dashboard/periods/2026-09');
    expect(res.statusCode).toBe(200);
    const statement = await api<StatementJson>('/v1/periods/2026-09');
    const totals = table(res.body, 'statement-totals');
    expect(totals?.head).toEqual(['Month', 'Events', 'Hours saved', 'Cost saved', 'Agent cost', 'Net saved']);
    expect(totals?.rows).toEqual([['September 2026', ...cells(statement.totals, false)]]);
    expect(res.body).not.toContain('Review hours');
    expect(res.body).not.toContain('Review cost');
  });

  it('shows a review recorded after the closing among the changes, with its review time', async () => {
    h.clock.advance(60_000);
    await review(september[0] ?? '', 6);
    const res = await page(h, cookie, '/dashboard/periods/2026-09');
    const statement = await api<StatementJson>('/v1/periods/2026-09');
    const changes = await api<ChangesJson>('/v1/periods/2026-09/changes');
    expect(changes.entries_total.review_hours).toBe(0.1);
    // The frozen statement has none…
    expect(table(res.body, 'statement-totals')?.rows).toEqual([
      ['September 2026', ...cells(statement.totals, false)],
    ]);
    // …what changed since has it, in the sum and in the review's entry.
    const sum = table(res.body, 'changes-sum');
    expect(sum?.head.slice(-2)).toEqual(REVIEW_HEADERS);
    expect(sum?.rows).toEqual([
      ['Statement', ...cells(changes.statement, true)],
      ['Entries since', ...cells(changes.entries_total, true)],
      ['Live', ...cells(changes.live.totals, true)],
    ]);
    const entries = table(res.body, 'changes-entries');
    expect(entries?.head.slice(-2)).toEqual(REVIEW_HEADERS);
    const [entry] = changes.entries;
    expect(changes.entries).toHaveLength(1);
    expect(entry).toMatchObject({ kind: 'adjustment', cause: 'review', event_id: september[0] });
    expect(entries?.rows.map((r) => [r[0], ...r.slice(3)])).toEqual([
      ['Review', ...(entry ? cells(entry, true).slice(1) : [])],
    ]);
    expect(res.body).toContain(`${hours(0.1)} h of review`);
  });
});
