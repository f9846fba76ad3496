/// <reference lib="dom" />
// Code passed to page.evaluate runs in the browser.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { count, hours, money } from '../../../src/dashboard/format.js';
import { PASSWORD, person } from '../../accounts/support.js';
import { startE2E, tableRows, type E2E } from './browser.js';
import { seedEvents } from './seed.js';

// `TALLY_SCREENSHOTS=/tmp/shots` keeps the pictures (to look at them); otherwise they go to a
// temporary folder that is removed.
const KEEP = process.env.TALLY_SCREENSHOTS;
const DIR = KEEP ?? mkdtempSync(join(tmpdir(), 'tally-period-shots-'));

interface Figures {
  events: number;
  hours_saved: number;
  cost_saved: number;
  agent_cost: number;
  net_saved: number;
  review_hours: number;
  review_cost: number;
}

describe(
  'the Periods page in Chromium: closing a month, its statement and what changed since',
  { timeout: 120_000 },
  () => {
    let e: E2E;
    let page: Page;
    const eur = (n: number) => money(n, 'EUR');
    const api = async <T>(url: string) => {
      const res = await e.h.request({ method: 'GET', url });
      expect(res.statusCode, res.body).toBe(200);
      return res.json<T>();
    };
    // October has a reviewed event: its statement's tables carry the review columns.
    const cells = (f: Figures, reviewed = true) => [
      count(f.events),
      hours(f.hours_saved),
      eur(f.cost_saved),
      eur(f.agent_cost),
      eur(f.net_saved),
      ...(reviewed ? [hours(f.review_hours), eur(f.review_cost)] : []),
    ];
    const shot = async (name: string, full = true) => {
      const path = `${DIR}/${name}.png`;
      await page.screenshot({ path, fullPage: full });
      expect(statSync(path).size).toBeGreaterThan(5_000);
    };

    beforeAll(async () => {
      e = await startE2E();
      await seedEvents(e.h, e.h.org.apiKey, 200);
      // One October event reviewed before the month is closed.
      e.h.clock.advance(1000);
      const tracked = await e.h.request({
        method: 'POST',
        url: '/v1/track',
        payload: {
          agent_id: 'reviewed-agent',
          task_type: 'support_ticket_reply',
          outcome: 'needs_review',
          occurred_at: '2026-10-14T09:00:00Z',
        },
      });
      expect(tracked.statusCode, tracked.body).toBe(201);
      const reviewed = await e.h.request({
        method: 'POST',
        url: `/v1/events/${tracked.json<{ event_id: string }>().event_id}/review`,
        payload: { review_minutes: 9, verdict: 'accepted' },
      });
      expect(reviewed.statusCode, reviewed.body).toBe(201);
      // An owner: reopening a closed month needs the owner role.
      await person(e.h, 'olive@example.com', 'owner');
      await person(e.h, 'adam@example.com', 'admin');
      ({ page } = await e.open());
      await e.signInAs(page, 'olive@example.com', PASSWORD);
    });
    afterAll(async () => {
      await e?.close();
      if (!KEEP) rmSync(DIR, { recursive: true, force: true });
    });

    it('lists the ended months as open, and closes October with a reason and a confirmation', async () => {
      await page.goto('/dashboard/periods');
      expect(await page.title()).toBe('Periods · Tally');
      const nav = page.getByRole('navigation', { name: 'Main' });
      expect(await nav.getByRole('link', { name: 'Periods', exact: true }).getAttribute('aria-current')).toBe(
        'page',
      );
      const rows = await tableRows(page, '#periods-table');
      expect(rows).toHaveLength(12);
      expect(rows[0]).toEqual(['October 2026', '○ Open', '—', '']);
      expect(rows[11]?.[0]).toBe('November 2025');
      await shot('periods-list');

      await page.getByRole('link', { name: 'October 2026' }).click();
      await page.waitForURL('**/dashboard/periods/2026-10');
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('October 2026');
      await page.getByLabel('Reason').fill('October books for the board');
      // Without the confirmation the browser keeps the form (the field is required).
      await page.getByRole('button', { name: 'Close October 2026' }).click();
      expect(page.url()).toMatch(/\/dashboard\/periods\/2026-10$/);
      expect(await page.getByRole('status').count()).toBe(0);
      await page.getByLabel('Freeze the statement of this month as it stands now').check();
      await page.getByRole('button', { name: 'Close October 2026' }).click();
      await page.waitForURL('**/dashboard/periods/2026-10');
      expect(await page.getByRole('status').textContent()).toContain(
        'October 2026 closed; its statement is frozen.',
      );

      const statement = await api<
        Figures & { totals: Figures; by_agent: Array<Figures & { agent_id: string }> }
      >('/v1/periods/2026-10');
      expect(statement).toMatchObject({ status: 'closed', reason: 'October books for the board' });
      expect(await tableRows(page, '#statement-totals')).toEqual([
        ['October 2026', ...cells(statement.totals)],
      ]);
      expect(await tableRows(page, '#statement-agents')).toEqual(
        statement.by_agent.map((r) => [r.agent_id, ...cells(r)]),
      );
      expect(statement.totals.review_hours).toBe(0.15);
      expect(await page.locator('#statement-totals thead th').allTextContents()).toEqual([
        'Month',
        'Events',
        'Hours saved',
        'Cost saved',
        'Agent cost',
        'Net saved',
        'Review hours',
        'Review cost',
      ]);
      expect(await page.locator('#changes-title + p').textContent()).toContain('Nothing');
      await shot('period-closed');
      await page.emulateMedia({ media: 'print' });
      // The print view keeps the statement and drops the navigation, forms and what changed since.
      expect(await page.locator('header.top').isVisible()).toBe(false);
      expect(await page.locator('form').first().isVisible()).toBe(false);
      expect(await page.locator('#statement-agents').isVisible()).toBe(true);
      expect(await page.locator('#statement-totals th', { hasText: 'Review cost' }).isVisible()).toBe(true);
      expect(await page.locator('#changes-title').isVisible()).toBe(false);
      await shot('period-print');
      await page.emulateMedia({ media: 'screen' });

      const csv = await page.request.get('/dashboard/periods/2026-10/statement.csv');
      expect(csv.headers()['content-disposition']).toBe('attachment; filename="tally-statement-2026-10.csv"');
      const fromApi = await e.h.request({ method: 'GET', url: '/v1/periods/2026-10/statement.csv' });
      expect(await csv.text()).toBe(fromApi.body);
    });

    it('shows a late event as an entry, and the difference on Reports and the Overview', async () => {
      e.h.clock.advance(60_000);
      const tracked = await e.h.request({
        method: 'POST',
        url: '/v1/track',
        payload: {
          agent_id: 'late-agent',
          task_type: 'support_ticket_reply',
          outcome: 'success',
          occurred_at: '2026-10-30T10:00:00Z',
          agent_cost: 0.5,
        },
      });
      expect(tracked.statusCode, tracked.body).toBe(201);
      const eventId = tracked.json<{ event_id: string }>().event_id;
      await page.goto('/dashboard/periods/2026-10');
      const changes = await api<{ entries_total: Figures; statement: Figures; live: { totals: Figures } }>(
        '/v1/periods/2026-10/changes',
      );
      expect(await page.locator('#changes-title + p').textContent()).toContain(
        'Live figures differ by +1 event',
      );
      expect(await tableRows(page, '#changes-sum')).toEqual([
        ['Statement', ...cells(changes.statement)],
        ['Entries since', ...cells(changes.entries_total)],
        ['Live', ...cells(changes.live.totals)],
      ]);
      const entries = await tableRows(page, '#changes-entries');
      expect(entries).toEqual([
        [
          'Late event',
          '2026-11-20 12:01 UTC',
          `${eventId}late-agent · support_ticket_reply`,
          ...cells(changes.entries_total, false).slice(1),
        ],
      ]);
      await shot('period-changes');

      for (const url of ['/dashboard/reports?period=90d&group_by=agent', '/dashboard?period=90d']) {
        await page.goto(url);
        const line = page.locator('.banner.closed-month');
        expect(await line.count(), url).toBe(1);
        expect((await line.textContent())?.replace(/\s+/g, ' ').trim()).toBe(
          'October 2026 closed on 2026-11-20 12:00 UTC; live figures differ by +1 event, ' +
            `+${hours(changes.entries_total.hours_saved)} h saved, +${eur(changes.entries_total.net_saved)} net saved.`,
        );
        expect(await line.getByRole('link', { name: 'October 2026' }).getAttribute('href')).toBe(
          '/dashboard/periods/2026-10',
        );
      }
      await page.goto('/dashboard/reports?period=90d&group_by=agent');
      await shot('reports-closed-month', false);
      await page.goto('/dashboard?period=7d');
      expect(await page.locator('.banner.closed-month').count()).toBe(0);
    });

    it('shows an admin the closed month without the reopening form', async () => {
      const admin = await e.open();
      await e.signInAs(admin.page, 'adam@example.com', PASSWORD);
      await admin.page.goto('/dashboard/periods/2026-10');
      expect(await admin.page.getByRole('button', { name: 'Reopen October 2026' }).count()).toBe(0);
      expect(await admin.page.getByText('Only an owner can reopen a closed month.').count()).toBe(1);
      await admin.page.screenshot({ path: `${DIR}/period-closed-as-admin.png`, fullPage: true });
    });

    it('reopens the month with a reason, audited, and keeps the earlier statement', async () => {
      e.h.clock.advance(60_000);
      await page.goto('/dashboard/periods/2026-10');
      await page.getByLabel('Reason').fill('late invoice');
      await page.getByLabel('Reopen this closed month (audited)').check();
      await page.getByRole('button', { name: 'Reopen October 2026' }).click();
      await page.waitForURL('**/dashboard/periods/2026-10');
      expect(await page.getByRole('status').textContent()).toContain('October 2026 reopened.');
      const audit = await api<{ data: Array<{ action: string; reason: string; target: string }> }>(
        '/v1/audit-log',
      );
      expect(audit.data[0]).toMatchObject({
        action: 'period.reopened',
        reason: 'late invoice',
        target: 'period:2026-10',
      });

      e.h.clock.advance(60_000);
      await page.getByLabel('Reason').fill('October books, second close');
      await page.getByLabel('Freeze a new statement of this month as it stands now').check();
      await page.getByRole('button', { name: 'Close October 2026' }).click();
      await page.waitForURL('**/dashboard/periods/2026-10');
      expect(await page.locator('section.panel h2', { hasText: 'Earlier statements' }).count()).toBe(1);
      await page.goto('/dashboard/periods');
      expect((await tableRows(page, '#periods-table'))[0]).toEqual([
        'October 2026',
        '■ Closed',
        '2026-11-20 12:03 UTC',
        'October books, second close',
      ]);

      // On a phone the page itself never scrolls sideways (wide tables scroll in their own box).
      const phone = await e.open({ width: 390, height: 844 });
      await e.signInAs(phone.page, 'olive@example.com', PASSWORD);
      await phone.page.goto('/dashboard/periods/2026-10');
      const width = await phone.page.evaluate(() => document.documentElement.scrollWidth);
      expect(width).toBeLessThanOrEqual(390);
      await phone.page.screenshot({ path: `${DIR}/period-phone.png`, fullPage: true });
      expect(e.problems).toEqual([]);
    });
  },
);
