/// <reference lib="dom" />
// Code passed to page.evaluate runs in the browser.
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { money } from '../../../src/dashboard/format.js';
import { startE2E, tableRows, type E2E } from './browser.js';
import { seedEvents } from './seed.js';

// `TALLY_SCREENSHOTS=/tmp/shots` keeps the pictures (to look at them); otherwise they go to a
// temporary folder that is removed.
const KEEP = process.env.TALLY_SCREENSHOTS;
const DIR = KEEP ?? mkdtempSync(join(tmpdir(), 'tally-budget-shots-'));

interface BudgetApi {
  id: string;
  name: string;
  amount: number;
  status: {
    state: string;
    spend: number;
    percent_used: number;
    forecast: number;
    forecast_low: number;
    forecast_high: number;
    run_out_date: string | null;
    method: { description: string };
  };
}

describe('the Budgets page and the Overview’s forecast and payback in Chromium', { timeout: 120_000 }, () => {
  let e: E2E;
  let page: Page;
  const eur = (n: number) => money(n, 'EUR');
  const api = async <T>(url: string) => {
    const res = await e.h.request({ method: 'GET', url });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<T>();
  };
  const send = async (method: 'POST' | 'PATCH', url: string, payload: object) => {
    const res = await e.h.request({ method, url, payload });
    expect(res.statusCode, res.body).toBeLessThan(300);
  };

  beforeAll(async () => {
    e = await startE2E();
    await seedEvents(e.h, e.h.org.apiKey, 400);
    await send('POST', '/v1/budgets', {
      name: 'Support bot',
      scope: 'agent',
      scope_value: 'support-bot',
      amount: 3,
    });
    await send('POST', '/v1/budgets', { name: 'All agents', scope: 'org', amount: 500 });
    await send('POST', '/v1/fixed-costs', {
      name: 'Building the agents',
      kind: 'one_off',
      amount: 3000,
      date: '2026-09-25',
    });
    await send('PATCH', '/v1/settings', { admin_emails: ['cfo@acme.test', 'ops@acme.test'] });
    ({ page } = await e.open());
    await e.signIn(page);
  });
  afterAll(async () => {
    await e?.close();
    if (!KEEP) rmSync(DIR, { recursive: true, force: true });
  });

  it('lists each budget with the figures of the API: spend, forecast and its band, run-out date, state', async () => {
    await page.goto('/dashboard/budgets');
    expect(await page.title()).toBe('Budgets · Tally');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Budgets');
    const nav = page.getByRole('navigation', { name: 'Main' });
    expect(await nav.getByRole('link', { name: 'Budgets', exact: true }).getAttribute('aria-current')).toBe(
      'page',
    );
    const budgets = (await api<{ data: BudgetApi[] }>('/v1/budgets')).data;
    const words: Record<string, string> = { on_track: 'On track', at_risk: 'At risk', exhausted: 'Used up' };
    const rows = await tableRows(page, '#budgets-table');
    expect(rows).toEqual(
      budgets.map((b) => [
        expect.stringContaining(b.name),
        expect.stringContaining(words[b.status.state] ?? ''),
        // Two lines each (a <br> between them).
        `${eur(b.status.spend)}${b.status.percent_used}%`,
        `${eur(b.amount)}alerts at 50, 80, 100%`,
        `${eur(b.status.forecast)}${eur(b.status.forecast_low)} to ${eur(b.status.forecast_high)}`,
        b.status.run_out_date ?? 'Not this month',
      ]),
    );
    expect(budgets.map((b) => b.status.state).sort()).toEqual(['exhausted', 'on_track']);
    // The method, in the words of the API.
    expect(await page.locator('.method').textContent()).toContain(budgets[0]?.status.method.description);
  });

  it('adds, changes and deletes a budget from labelled controls and the keyboard', async () => {
    await page.goto('/dashboard/budgets');
    await page.getByLabel('Name').fill('Acme client');
    await page.getByLabel('Scope').selectOption('client');
    await page.getByLabel('Agent, client or task type').fill('acme');
    await page.getByLabel('Monthly amount (EUR)').fill('2.5');
    await page.getByLabel('Alert thresholds (%)').fill('75, 100');
    // Enter in a field submits its form, as a keyboard user would.
    await page.getByLabel('Alert thresholds (%)').press('Enter');
    await page.waitForURL('**/dashboard/budgets');
    expect(await page.getByRole('status').textContent()).toContain('Budget “Acme client” added.');
    const created = (await api<{ data: BudgetApi[] }>('/v1/budgets')).data.find(
      (b) => b.name === 'Acme client',
    );
    expect(created).toMatchObject({
      amount: 2.5,
      scope: 'client',
      scope_value: 'acme',
      thresholds: [75, 100],
    });

    await page.getByRole('link', { name: 'Acme client' }).click();
    await page.getByLabel('Monthly amount (EUR)').fill('4');
    await page.getByRole('button', { name: 'Save budget' }).click();
    expect(await page.getByRole('status').textContent()).toContain('saved');
    expect((await api<BudgetApi>(`/v1/budgets/${created?.id}`)).amount).toBe(4);

    // A refusal is a notice on the page, never an error page (0 passes the field's own min).
    await page.getByLabel('Monthly amount (EUR)').fill('0');
    await page.getByRole('button', { name: 'Save budget' }).click();
    expect(await page.getByRole('status').textContent()).toContain(
      'Not saved: amount must be a number above 0',
    );

    await page.getByRole('button', { name: 'Delete budget “Acme client”' }).click();
    expect(await page.getByRole('status').textContent()).toContain('Budget deleted.');
    expect((await e.h.request({ method: 'GET', url: `/v1/budgets/${created?.id}` })).statusCode).toBe(404);
  });

  it('keeps fixed costs, FTE hours and e-mail choices', async () => {
    await page.goto('/dashboard/budgets/payback');
    await page.getByLabel('Name').fill('Platform licence');
    await page.getByLabel('Kind').selectOption('monthly');
    await page.getByLabel('Amount (EUR)').fill('250');
    await page.getByLabel('From month (monthly)').fill('2026-09');
    await page.getByRole('button', { name: 'Add cost' }).click();
    expect(await page.getByRole('status').textContent()).toContain('Fixed cost “Platform licence” added.');
    expect(await tableRows(page, '#fixed-costs-table')).toEqual([
      ['Platform licence', 'Monthly', '€250.00 a month', '2026-09 to now', 'Delete'],
      ['Building the agents', 'One-off', '€3,000.00', '2026-09-25', 'Delete'],
    ]);
    await page.getByLabel('Working hours per FTE-month').fill('150');
    await page.getByRole('button', { name: 'Save', exact: true }).click();

    await page.goto('/dashboard/budgets/emails');
    await page.getByLabel('cfo@acme.test').check();
    await page.getByRole('button', { name: 'Save alert e-mails' }).click();
    await page.getByLabel('Frequency').selectOption('monthly');
    await page.getByLabel('Recipients').fill('board@acme.test\ncfo@acme.test');
    await page.getByRole('button', { name: 'Schedule' }).click();
    expect(await page.getByRole('status').textContent()).toContain('The monthly report e-mail is scheduled.');
    const settings = await api<{ fte_hours_per_month: number; alert_emails: string[] }>('/v1/settings');
    expect(settings).toMatchObject({ fte_hours_per_month: 150, alert_emails: ['cfo@acme.test'] });
    const schedules = await api<{ data: Array<{ frequency: string; recipients: Array<{ email: string }> }> }>(
      '/v1/report-schedules',
    );
    expect(schedules.data.map((s) => [s.frequency, s.recipients.map((r) => r.email)])).toEqual([
      ['monthly', ['board@acme.test', 'cfo@acme.test']],
    ]);
  });

  it('shows on the Overview the forecast and the payback of the API, and the budget at risk', async () => {
    await page.goto('/dashboard?period=30d');
    const forecast = await api<{
      forecast: { events: number; cost_saved: number; agent_cost: number; net_saved: number };
      low: { agent_cost: number; net_saved: number };
      high: { agent_cost: number; net_saved: number };
      method: { description: string; band: string };
    }>('/v1/reports/forecast');
    const card = (label: string) =>
      page.locator('.card', { has: page.locator('dt', { hasText: new RegExp(`^${label}$`) }) });
    const figure = (label: string) => card(label).locator('.figure').textContent();
    expect(await figure('Agent cost at month end')).toBe(eur(forecast.forecast.agent_cost));
    expect(await card('Agent cost at month end').locator('.note').textContent()).toBe(
      `between ${eur(forecast.low.agent_cost)} and ${eur(forecast.high.agent_cost)}`,
    );
    expect(await figure('Net saved at month end')).toBe(eur(forecast.forecast.net_saved));
    expect(await figure('Cost saved at month end')).toBe(eur(forecast.forecast.cost_saved));
    expect(await page.locator('section[aria-labelledby="forecast-title"] .method').textContent()).toBe(
      `Method: ${forecast.method.description} ${forecast.method.band}`,
    );
    // The chart: actual and forecast running totals, with its table as text alternative.
    expect(await page.locator('figure.month-chart svg:visible polyline.projected').count()).toBe(2);
    expect(await page.locator('#forecast-table tbody tr').count()).toBeGreaterThan(10);

    const payback = await api<{
      period: { roi_percent: number; fixed_costs: number; net_after_fixed_costs: number };
      payback: { month: string | null; description: string };
      this_month: { fte_freed_forecast: number };
    }>('/v1/reports/payback?period=30d');
    expect(await figure('ROI net of fixed costs')).toBe(
      `${payback.period.roi_percent.toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 })}%`,
    );
    expect(await figure('Fixed costs')).toBe(eur(payback.period.fixed_costs));
    expect(await figure('Net saved after fixed costs')).toBe(eur(payback.period.net_after_fixed_costs));
    expect(await figure('Payback month')).toBe(payback.payback.month ?? 'Not in sight');
    expect(await figure('FTE capacity freed')).toBe(
      `${payback.this_month.fte_freed_forecast.toFixed(2)} FTE`,
    );
    // The API's sentence, its amounts in the page's money format (`889.97 EUR` → `€889.97`).
    expect(await page.locator('section[aria-labelledby="payback-title"]').textContent()).toContain(
      payback.payback.description.replace(/(-?\d+\.\d{2}) EUR/g, (_, amount: string) => eur(Number(amount))),
    );
    // The existing ROI card stays, beside the new one, and the page says how they differ.
    expect(await figure('ROI')).toMatch(/×$/);
    expect(await page.locator('section[aria-labelledby="payback-title"]').textContent()).toContain(
      'ROI above (×) is cost saved ÷ agent cost',
    );
    const alert = page.getByRole('alert').filter({ hasText: 'Budget used up' });
    expect(await alert.textContent()).toContain('Support bot');
  });

  it('explains on the Free plan which plan unlocks budgets, never an error page', async () => {
    const free = await e.h.createOrg({ plan: 'free' });
    const { page: p } = await e.open();
    await e.signIn(p, free.apiKey);
    for (const url of ['/dashboard/budgets', '/dashboard/budgets/payback', '/dashboard/budgets/emails']) {
      const res = await p.goto(url);
      expect(res?.status()).toBe(200);
      expect(await p.getByRole('region', { name: 'Plan required' }).textContent()).toContain(
        'Budgets, forecasts and payback needs the Pro plan',
      );
    }
  });

  it('lays out the Budgets pages and the Overview at 1280×800 and 390×844 without spilling', async () => {
    const pages = [
      ['overview', '/dashboard'],
      ['budgets', '/dashboard/budgets'],
      ['budgets-payback', '/dashboard/budgets/payback'],
      ['budgets-emails', '/dashboard/budgets/emails'],
      ['reports-by-day', '/dashboard/reports?period=30d&group_by=day&sort=agent_cost'],
    ] as const;
    for (const [size, viewport] of [
      ['desktop', { width: 1280, height: 800 }],
      ['phone', { width: 390, height: 844 }],
    ] as const) {
      const { page: p } = await e.open(viewport);
      await e.signIn(p);
      for (const [name, url] of pages) {
        await p.goto(url);
        const wide = await p.evaluate(() => {
          const scrolls = (el: Element) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
          return Array.from(document.querySelectorAll('body *'))
            .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
            .filter((el) => {
              for (let up = el.parentElement; up; up = up.parentElement) if (scrolls(up)) return false;
              return !scrolls(el);
            })
            .slice(0, 5)
            .map((el) => `${el.tagName}.${el.className}`);
        });
        expect(wide, `${name} at ${size} spills out of the page`).toEqual([]);
        // The forecast charts keep one drawing shown, its text inside it, legible and apart.
        const charts = await p.evaluate(() =>
          Array.from(document.querySelectorAll('figure.month-chart')).map((figure) => {
            const shown = Array.from(figure.querySelectorAll('svg')).filter(
              (svg) => getComputedStyle(svg).display !== 'none',
            );
            const problems: string[] = [];
            const sizes: number[] = [];
            for (const svg of shown) {
              const box = svg.getBoundingClientRect();
              const scale = box.width / svg.viewBox.baseVal.width;
              const texts = Array.from(svg.querySelectorAll('text'));
              for (const text of texts) {
                const r = text.getBoundingClientRect();
                sizes.push(Number.parseFloat(getComputedStyle(text).fontSize) * scale);
                if (r.left < box.left - 0.5 || r.right > box.right + 0.5)
                  problems.push(`"${text.textContent}" outside`);
              }
              const xs = Array.from(svg.querySelectorAll('text.axis.x'))
                .map((t) => t.getBoundingClientRect())
                .sort((a, b) => a.left - b.left);
              for (let i = 1; i < xs.length; i++) {
                const a = xs[i - 1];
                const b = xs[i];
                if (a && b && b.left < a.right - 0.5) problems.push('x labels overlap');
              }
            }
            return { shown: shown.length, problems, min: Math.min(...sizes), max: Math.max(...sizes) };
          }),
        );
        for (const chart of charts) {
          expect(chart.shown, `${name} at ${size}`).toBe(1);
          expect(chart.problems, `${name} at ${size}`).toEqual([]);
          expect(chart.min, `${name} at ${size}`).toBeGreaterThanOrEqual(10);
          expect(chart.max, `${name} at ${size}`).toBeLessThanOrEqual(18);
        }
        if (name === 'overview' || name === 'reports-by-day') expect(charts.length, name).toBe(1);
        const path = `${DIR}/${name}-${size}.png`;
        await p.screenshot({ path, fullPage: true });
        expect(statSync(path).size).toBeGreaterThan(5_000);
      }
    }
    if (KEEP) copyFileSync(`${DIR}/overview-desktop.png`, `${DIR}/overview-budgets.png`);
    expect(e.problems).toEqual([]);
  });
});
