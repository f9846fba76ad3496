/// <reference lib="dom" />
// Code passed to page.evaluate runs in the browser.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { createApiKey, revokeApiKey } from '../../../src/orgs/api-keys.js';
import { count, decimal, hours, money } from '../../../src/dashboard/format.js';
import { startE2E, tableRows, type E2E } from './browser.js';
import { seedEvents, XSS_AGENT } from './seed.js';
import type { RefRow as Row } from '../../reports/reference.js';

const PAGES = [
  ['Overview', '/dashboard'],
  ['Reports', '/dashboard/reports'],
  ['Events', '/dashboard/events'],
  ['Task types', '/dashboard/task-types'],
  ['Webhooks', '/dashboard/webhooks'],
  ['Usage', '/dashboard/usage'],
  ['Settings', '/dashboard/settings'],
] as const;

describe('dashboard pages in Chromium', { timeout: 90_000 }, () => {
  let e: E2E;
  let page: Page;
  const eur = (n: number) => money(n, 'EUR');
  const api = async <T>(url: string) => {
    const res = await e.h.request({ method: 'GET', url });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<T>();
  };

  beforeAll(async () => {
    e = await startE2E();
    await seedEvents(e.h);
    ({ page } = await e.open());
  });
  afterAll(async () => e?.close());

  it('refuses wrong, revoked and ingest keys with a message, then signs in an admin key', async () => {
    const revoked = await createApiKey({ ctx: e.h.ctx, orgId: e.h.org.id });
    await revokeApiKey({ ctx: e.h.ctx, orgId: e.h.org.id, keyId: revoked.key.id });
    const ingest = await createApiKey({ ctx: e.h.ctx, orgId: e.h.org.id, scope: 'ingest' });
    for (const [key, message] of [
      ['tally_live_wrongkey_' + 'x'.repeat(48), 'That API key is not valid'],
      [revoked.api_key, 'has been revoked'],
      [ingest.api_key, 'That is an ingest key'],
    ] as const) {
      e.h.clock.advance(1000);
      await page.goto('/dashboard/login');
      await page.getByText('Sign in with an API key', { exact: true }).click();
      await page.getByLabel('API key').fill(key);
      await page.getByRole('button', { name: 'Sign in with the key' }).click();
      await expect.poll(() => page.getByRole('alert').textContent()).toContain(message);
      expect((await page.context().cookies()).length).toBe(0);
    }
    // A refused sign-in answers 401, which Chromium logs as a failed resource; that is expected.
    e.problems.splice(0);
    await e.signIn(page);
    expect(await page.title()).toBe('Overview · Tally');
    const cookie = (await page.context().cookies())[0];
    expect(cookie?.httpOnly).toBe(true);
    expect(cookie?.sameSite).toBe('Strict');
    expect(cookie?.value).not.toContain(e.h.org.apiKey);
  });

  it('lays every page out with the navigation, its h1, its title and the organisation', async () => {
    for (const [name, url] of PAGES) {
      await page.goto(url);
      expect(await page.title()).toBe(`${name} · Tally`);
      await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe(name);
      const nav = page.getByRole('navigation', { name: 'Main' });
      for (const [label] of PAGES)
        expect(await nav.getByRole('link', { name: label, exact: true }).count()).toBe(1);
      expect(await nav.getByRole('button', { name: 'Sign out' }).count()).toBe(1);
      const org = await page.getByLabel('Organisation').textContent();
      expect(org).toContain('Acme');
      expect(org).toContain('Pro plan');
      expect(org).toContain('EUR');
    }
  });

  it('shows on the Overview the figures the API reports for the same period', async () => {
    await page.goto('/dashboard');
    await page.getByRole('group', { name: 'Period' }).getByRole('link', { name: '30d' }).click();
    const report = await api<{ rows: Row[] }>('/v1/reports/cost-saved?period=30d&group_by=month');
    const micro = (f: (r: Row) => number) =>
      report.rows.reduce((s, r) => s + Math.round(f(r) * 1e6), 0) / 1e6;
    const totals = {
      events: report.rows.reduce((s, r) => s + r.events, 0),
      hours: micro((r) => r.hours_saved),
      saved: micro((r) => r.cost_saved),
      cost: micro((r) => r.agent_cost),
      net: micro((r) => r.net_saved),
    };
    expect(totals.events).toBeGreaterThan(10);
    const card = async (label: string) =>
      page
        .locator('.card', { has: page.locator('dt', { hasText: new RegExp(`^${label}$`) }) })
        .locator('.figure')
        .textContent();
    expect(await card('Events')).toBe(count(totals.events));
    expect(await card('Hours saved')).toBe(hours(totals.hours));
    expect(await card('Cost saved')).toBe(eur(totals.saved));
    expect(await card('Agent cost')).toBe(eur(totals.cost));
    expect(await card('Net saved')).toBe(eur(totals.net));
    expect(await card('ROI')).toBe(`${(totals.saved / totals.cost).toFixed(1)}×`);
    expect(await card('Cost saved')).toMatch(/^€[\d,]+\.\d{2}$/);

    // The change against the previous 30 days, from the API's own 30d report 30 days ago.
    const deltas = await page.locator('.card .delta').allTextContents();
    expect(deltas.slice(0, 5).every((d) => /vs previous period/.test(d))).toBe(true);

    const top = await api<{ rows: Row[] }>(
      '/v1/reports/cost-saved?period=30d&group_by=agent&sort=net_saved&top=5',
    );
    const shown = await tableRows(page, 'section.panel:has(h3:text("Top agents")) table');
    expect(shown).toEqual(
      top.rows.map((r) => [r.group.agent_id ?? '(none)', count(r.events), eur(r.net_saved)]),
    );

    // The chart has its table as text alternative, one row per day with events.
    const days = await api<{ rows: Row[] }>('/v1/reports/cost-saved?period=30d&group_by=day');
    expect(await page.locator('figure.chart svg:visible polyline:not(.partial)').count()).toBe(2);
    const trend = await tableRows(page, '#trend-table');
    expect(trend.length).toBe(days.rows.length);
  });

  it('uses weeks in the chart beyond 30 days and no change figure for ytd and all', async () => {
    await page.goto('/dashboard?period=90d');
    expect(await page.locator('#trend-table thead th').first().textContent()).toBe('Week of');
    await page.goto('/dashboard?period=all');
    const deltas = await page.locator('.card .delta').allTextContents();
    expect(deltas.every((d) => d.trim() === '')).toBe(true);
  });

  it('builds a report from its labelled controls, equal to the API, with its CSV and API request', async () => {
    await page.goto('/dashboard/reports');
    await page.getByLabel('Period').selectOption('90d');
    await page.getByLabel('Group by', { exact: true }).selectOption('task_type');
    await page.getByLabel('Then by', { exact: true }).selectOption('client');
    await page.getByLabel('Sort by').selectOption('net_saved');
    await page.getByLabel('Top').fill('6');
    await page.getByLabel('Outcome').selectOption('success');
    await page.getByRole('button', { name: 'Show report' }).click();
    await expect.poll(() => page.url()).toContain('sort=net_saved');
    const query = 'period=90d&group_by=task_type%2Cclient&sort=net_saved&top=6&outcome=success';
    const report = await api<{ rows: Row[] }>(`/v1/reports/time-saved?${query}`);
    const types = await api<{ data: Array<{ key: string; display_name: string }> }>('/v1/task-types');
    const typeName = new Map(types.data.map((t) => [t.key, t.display_name]));
    const rows = await tableRows(page, '#report-table');
    const reviewed = report.rows.some((r) => r.review_hours !== 0 || r.review_cost !== 0);
    // A task type by its name, its key under it.
    expect(rows).toEqual(
      report.rows.map((r) => [
        `${typeName.get(r.group.task_type ?? '') ?? '?'} ${r.group.task_type ?? '?'}`,
        r.group.client_id ?? '(none)',
        count(r.events),
        hours(r.hours_saved),
        eur(r.cost_saved),
        eur(r.agent_cost),
        eur(r.net_saved),
        ...(reviewed ? [hours(r.review_hours), eur(r.review_cost)] : []),
      ]),
    );
    expect(await page.locator('.report-chart svg:visible rect.bar').count()).toBe(report.rows.length);

    // A reload keeps the view: its state is in the URL.
    await page.reload();
    expect(await tableRows(page, '#report-table')).toEqual(rows);

    const href = await page.getByRole('link', { name: 'Download CSV' }).getAttribute('href');
    expect(href).toBe(`/dashboard/reports/export?${query}`);
    const csv = await page.request.get(href ?? '');
    const apiCsv = await e.h.request({ method: 'GET', url: `/v1/reports/export?${query}` });
    expect(csv.status()).toBe(200);
    expect(await csv.text()).toBe(apiCsv.body);
    expect(await page.locator('#api-request').textContent()).toContain(
      `${e.origin}/v1/reports/time-saved?${query}`,
    );
  });

  it('lists events newest first like the API, filters them and explains one', async () => {
    await page.goto('/dashboard/events');
    const list = await api<{ data: Array<{ event_id: string; agent_id: string; hours_saved: number }> }>(
      '/v1/events?limit=50',
    );
    const rows = await tableRows(page, 'main table');
    expect(rows.map((r) => r[1])).toEqual(list.data.map((d) => d.agent_id));
    expect(await page.getByRole('link', { name: 'More events' }).count()).toBe(1);

    await page.getByLabel('Agent').fill('invoice-agent');
    await page.getByLabel('Outcome').selectOption('success');
    await page.getByRole('button', { name: 'Filter' }).click();
    const filtered = await tableRows(page, 'main table');
    expect(filtered.length).toBeGreaterThan(0);
    expect(filtered.every((r) => r[1] === 'invoice-agent' && r[3] === 'Success')).toBe(true);

    const first = list.data.find((d) => d.agent_id === 'support-bot');
    await page.goto(`/dashboard/events/${first?.event_id ?? ''}`);
    const event = await api<Record<string, unknown>>(`/v1/events/${first?.event_id ?? ''}`);
    const derivation = (await page.locator('.derivation').textContent()) ?? '';
    expect(derivation).toContain(`${String(event.resolved_baseline_minutes)} minutes`);
    expect(derivation).toContain("Tally's built-in default");
    // The exact hours, so the multiplication on the page comes out at the cost saved shown.
    expect(derivation).toContain(`${decimal(event.hours_saved as number)} h × €`);
    expect(derivation).toContain("the organisation's default hourly rate");
    const fields = await page.locator('table.fields').textContent();
    for (const key of [
      'event_id',
      'occurred_at',
      'received_at',
      'resolved_baseline_source',
      'resolved_cost_source',
    ]) {
      expect(fields).toContain(String(event[key]));
    }
  });

  it('shows a computed agent cost with what priced it', async () => {
    const list = await api<{ data: Array<{ event_id: string; resolved_cost_source: string }> }>(
      '/v1/events?limit=50',
    );
    const computed = list.data.find((d) => d.resolved_cost_source === 'computed');
    await page.goto(`/dashboard/events/${computed?.event_id ?? ''}`);
    const text = (await page.locator('.derivation').textContent()) ?? '';
    expect(text).toContain('computed from the model and token counts');
    expect(text).toMatch(/Priced as openai \/ gpt-4o/);
    expect(text).toContain('@pydantic/genai-prices');
  });

  it('shows an agent id full of markup as text, everywhere, without running it', async () => {
    for (const url of ['/dashboard', '/dashboard/events', `/dashboard/reports?group_by=agent&period=90d`]) {
      await page.goto(url);
      expect(await page.getByText(XSS_AGENT, { exact: true }).count(), url).toBeGreaterThan(0);
      expect(await page.locator('img[src="x"]').count()).toBe(0);
    }
  });

  it('matches the Usage page to GET /v1/reports/usage', async () => {
    const usage = await api<{ events_this_month: number; lifetime_events: number; overage_events: number }>(
      '/v1/reports/usage',
    );
    await page.goto('/dashboard/usage');
    const figure = async (label: string) =>
      page
        .locator('.card', { has: page.locator('dt', { hasText: label }) })
        .locator('.figure')
        .textContent();
    expect(await figure('Events this month')).toBe(count(usage.events_this_month));
    expect(await figure('Lifetime events')).toBe(count(usage.lifetime_events));
    expect(await figure('Overage events')).toBe(count(usage.overage_events));
    expect((await figure('Projected overage'))?.trim()).toBe('No overage forecast');
    expect(await figure('Days left in the month')).toBe('11');
    expect(await page.getByLabel('Events this month against the included events').getAttribute('value')).toBe(
      String(usage.events_this_month),
    );
  });

  it('fits a 390×844 phone screen on every page without horizontal page scrolling', async () => {
    const { page: phone } = await e.open({ width: 390, height: 844 });
    await e.signIn(phone);
    for (const [name, url] of [
      ...PAGES,
      ['Reports', '/dashboard/reports?group_by=agent,task_type,client&period=90d'],
    ]) {
      await phone.goto(url);
      const width = await phone.evaluate(() => document.documentElement.scrollWidth);
      expect(width, name).toBeLessThanOrEqual(390);
      expect(await phone.getByRole('link', { name: 'Settings', exact: true }).isVisible()).toBe(true);
    }
  });

  it('never left the origin and logged no console error', () => {
    expect(e.problems).toEqual([]);
  });

  it('signs out with the Sign out button', async () => {
    await page.goto('/dashboard');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe('/dashboard/login');
    expect(await page.getByText('You are signed out.').count()).toBe(1);
    await page.goto('/dashboard/settings');
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
  });
});
