import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/billing/plans.js';
import { count, hours, money } from '../../src/dashboard/format.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { tempFile } from '../support/temp.js';
import { seedEvents } from './e2e/seed.js';
import { page, session } from './support.js';
import type { RefRow as Row } from '../reports/reference.js';

// A plan table whose Pro plan includes 150 events, so the seeded month passes 80% of it.
const plansFile = tempFile(
  'tally-dash-plans-',
  'plans.json',
  JSON.stringify({ ...DEFAULT_PLANS, pro: { ...DEFAULT_PLANS.pro, included_events_per_month: 150 } }),
);

/** The text of each card's figure on the Overview, by its label. */
function cards(body: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of body.matchAll(/<dt>([^<]+)<\/dt>\s*<dd class="figure">([^<]+)<\/dd>/g)) {
    out[(m[1] ?? '').trim()] = (m[2] ?? '').trim();
  }
  return out;
}

describe.each(ENGINES)('dashboard figures against the API (%s)', (engine) => {
  let h: Harness;
  let cookie: string;
  beforeAll(async () => {
    h = await createHarness(engine, { env: { TALLY_PLANS_FILE: plansFile } });
    await seedEvents(h, h.org.apiKey, 120);
    cookie = await session(h);
  });
  afterAll(async () => h.close());

  it.each(['24h', '7d', '30d', '90d', 'ytd', 'all'])(
    'shows the API totals on the Overview for %s',
    async (period) => {
      const res = await h.request({
        method: 'GET',
        url: `/v1/reports/cost-saved?period=${period}&group_by=month`,
      });
      const rows = res.json<{ rows: Row[] }>().rows;
      const sum = (f: (r: Row) => number) => rows.reduce((s, r) => s + Math.round(f(r) * 1e6), 0) / 1e6;
      const shown = cards((await page(h, cookie, `/dashboard?period=${period}`)).body);
      expect(shown).toMatchObject({
        Events: count(rows.reduce((s, r) => s + r.events, 0)),
        'Hours saved': hours(sum((r) => r.hours_saved)),
        'Cost saved': money(
          sum((r) => r.cost_saved),
          'EUR',
        ),
        'Agent cost': money(
          sum((r) => r.agent_cost),
          'EUR',
        ),
        'Net saved': money(
          sum((r) => r.net_saved),
          'EUR',
        ),
      });
    },
  );

  it('shows the previous period from the API report of the same length before', async () => {
    // 7 days before now: the 7d report as the API answered it a week ago equals the rows of
    // that window, which the dashboard compares against.
    const now = await page(h, cookie, '/dashboard?period=7d');
    expect(now.body).toMatch(/(▲|▼|no change|new this period)/);
    expect((now.body.match(/vs previous period/g) ?? []).length).toBeGreaterThanOrEqual(5);
  });

  async function reportMatchesApi() {
    const q = 'period=90d&group_by=agent%2Cclient&sort=agent_cost&top=7';
    const api = (await h.request({ method: 'GET', url: `/v1/reports/time-saved?${q}` })).json<{
      rows: Row[];
    }>();
    const body = (await page(h, cookie, `/dashboard/reports?${q}`)).body;
    // The review columns show only where a row has measured review time.
    const reviewed = api.rows.some((r) => r.review_hours !== 0 || r.review_cost !== 0);
    expect(body.includes('>Review hours<') || body.includes('Review hours\n'), 'review columns').toBe(
      reviewed,
    );
    const table = body.slice(
      body.indexOf('<table id="report-table"'),
      body.indexOf('</table>', body.indexOf('<table id="report-table"')),
    );
    const cells = [...table.matchAll(/<td class="num">([^<]+)<\/td>/g)].map((m) => m[1]);
    expect(cells).toEqual(
      api.rows.flatMap((r) => [
        count(r.events),
        hours(r.hours_saved),
        money(r.cost_saved, 'EUR'),
        money(r.agent_cost, 'EUR'),
        money(r.net_saved, 'EUR'),
        ...(reviewed ? [hours(r.review_hours), money(r.review_cost, 'EUR')] : []),
      ]),
    );
    return reviewed;
  }

  it('shows a report equal to the API for the same query', async () => {
    expect(await reportMatchesApi()).toBe(false);
  });

  it('shows the review columns once an event of the view has a measured review', async () => {
    // An event of the view's first row (agent and client), so the view holds its review.
    const top = (
      await h.request({
        method: 'GET',
        url: '/v1/reports/time-saved?period=90d&group_by=agent%2Cclient&sort=agent_cost&top=1',
      })
    ).json<{ rows: Row[] }>().rows[0];
    const filter = new URLSearchParams({ limit: '100', agent_id: String(top?.group.agent_id ?? '') });
    const listed = await h.request({ method: 'GET', url: `/v1/events?${filter}` });
    expect(listed.statusCode, listed.body).toBe(200);
    const eventId =
      listed
        .json<{ data: Array<{ event_id: string; metadata: { client_id?: string } | null }> }>()
        .data.find((e) => (e.metadata?.client_id ?? null) === (top?.group.client_id ?? null))?.event_id ?? '';
    const review = await h.request({
      method: 'POST',
      url: `/v1/events/${eventId}/review`,
      payload: { review_minutes: 12, verdict: 'corrected' },
    });
    expect(review.statusCode, review.body).toBe(201);
    expect(await reportMatchesApi()).toBe(true);
  });

  it('warns on the Overview past 80% of the included events and about a failing webhook', async () => {
    const body = (await page(h, cookie, '/dashboard')).body;
    expect(body).toContain('of the included events used');
    await h.request({
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url: 'https://hooks.example.test/tally', event_types: ['event.created'] },
    });
    await h.storage.db.updateTable('webhooks').set({ status: 'failing', consecutive_failures: 6 }).execute();
    const warned = (await page(h, cookie, '/dashboard')).body;
    expect(warned).toContain('Webhook failing:');
    expect(warned).toContain('https://hooks.example.test/tally');
  });

  it('matches the Usage page to the API', async () => {
    const usage = (await h.request({ method: 'GET', url: '/v1/reports/usage' })).json<{
      events_this_month: number;
      overage_events: number;
      projected_overage_eur: number | null;
    }>();
    const shown = cards((await page(h, cookie, '/dashboard/usage')).body);
    expect(shown['Events this month']).toBe(count(usage.events_this_month));
    expect(shown['Overage events']).toBe(count(usage.overage_events));
    expect(usage.projected_overage_eur).not.toBeNull();
    const body = (await page(h, cookie, '/dashboard/usage')).body;
    expect(body).toContain(money(usage.projected_overage_eur ?? 0, 'EUR'));
  });
});
