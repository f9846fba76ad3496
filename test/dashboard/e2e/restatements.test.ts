/// <reference lib="dom" />
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { money } from '../../../src/dashboard/format.js';
import { startE2E, tableRows, type E2E } from './browser.js';
import { seedEvents } from './seed.js';

// `TALLY_SCREENSHOTS=/tmp/shots` keeps the pictures (to look at them).
const DIR = process.env.TALLY_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'tally-restatement-shots-'));

interface Preview {
  affected_events: number;
  events: Array<{ event_id: string; after: { hours_saved: number; cost_saved: number } }>;
  months: Array<{
    month: string;
    events_affected: number;
    before: { cost_saved: number };
    after: { cost_saved: number };
    by_agent: Array<{ agent_id: string }>;
    by_task_type: unknown[];
    by_client: unknown[];
  }>;
}

describe('a change from a past date, previewed then applied, in Chromium', { timeout: 120_000 }, () => {
  let e: E2E;
  let page: Page;
  const eur = (n: number) => money(n, 'EUR');

  beforeAll(async () => {
    e = await startE2E();
    await seedEvents(e.h, e.h.org.apiKey, 200);
    ({ page } = await e.open());
    await e.signIn(page);
  });
  afterAll(async () => e?.close());

  it('shows the preview of a past change with the API’s figures, and applies it with a reason', async () => {
    await page.goto('/dashboard/task-types/support_ticket_reply');
    expect(await page.locator('#assumption-history').count()).toBe(0);
    await page.getByLabel('New value').fill('12');
    await page.locator('#restate-from').fill('2026-10-15');
    await page.getByRole('button', { name: 'Preview the change' }).click();
    await page.waitForURL((url) => url.pathname === '/dashboard/restatements/preview');
    expect(await page.locator('h1').textContent()).toBe('Restatement preview');

    const api = (
      await e.h.request({
        method: 'POST',
        url: '/v1/restatements/preview',
        payload: {
          kind: 'baseline_override',
          key: 'support_ticket_reply',
          value: 12,
          effective_from: '2026-10-15',
        },
      })
    ).json<Preview>();
    expect(api.affected_events).toBeGreaterThan(0);
    const months = await tableRows(page, '#restatement-months');
    expect(months).toEqual(
      api.months.map((m) => [
        String(m.events_affected),
        expect.any(String),
        eur(m.before.cost_saved),
        expect.any(String),
        expect.any(String),
        eur(m.after.cost_saved),
        expect.any(String),
      ]),
    );
    expect((await tableRows(page, '#restatement-events')).length).toBe(Math.min(50, api.affected_events));
    // The groups moved: one row per agent, task type and client of each month.
    const groups = await tableRows(page, '#restatement-groups');
    expect(groups.length).toBe(
      api.months.reduce((n, m) => n + m.by_agent.length + m.by_task_type.length + m.by_client.length, 0),
    );
    expect(groups[0]?.slice(0, 3)).toEqual([
      api.months[0]?.month,
      'Agent',
      api.months[0]?.by_agent[0]?.agent_id,
    ]);
    await page.screenshot({ path: join(DIR, 'restatement-preview.png'), fullPage: true });

    // Nothing is written until it is applied.
    const before = (
      await e.h.request({ method: 'GET', url: '/v1/assumptions/history?kind=baseline_override' })
    ).json();
    expect(before.data).toEqual([]);
    await page.getByLabel('Reason').fill('Time study of October');
    await page.getByRole('button', { name: 'Apply restatement' }).click();
    await page.waitForURL((url) => url.pathname === '/dashboard/task-types/support_ticket_reply');
    expect(
      await page.getByText(/Restatement rst_[0-9A-Z]{26} applied from .*: \d+ events adjusted/).count(),
    ).toBe(1);
    const rows = await tableRows(page, '#assumption-history');
    expect(rows[0]).toEqual([
      'Baseline override support_ticket_reply',
      '12 minutes',
      expect.stringContaining('2026'),
      expect.any(String),
      'In force Restated',
      'Time study of October',
    ]);
    await page.screenshot({ path: join(DIR, 'task-type-history.png'), fullPage: true });
    const after = (
      await e.h.request({ method: 'GET', url: '/v1/assumptions/history?kind=baseline_override' })
    ).json();
    expect(after.data[0]).toMatchObject({
      value: 12,
      reason: 'Time study of October',
      effective_from: '2026-10-15T00:00:00.000Z',
    });

    // The event page shows the applied figures: the restatement's entry, and the preview's "after".
    const moved = api.events[0];
    if (moved === undefined) throw new Error('no event moved');
    const restatementId = after.data[0].restatement_id as string;
    await page.goto(`/dashboard/events/${moved.event_id}`);
    const ledger = await page
      .locator('table.ledger tbody tr, table.ledger tfoot tr')
      .evaluateAll((rows) =>
        rows.map((row) =>
          Array.from(row.querySelectorAll('th, td')).map((c) =>
            (c.textContent ?? '').replace(/\s+/g, ' ').trim(),
          ),
        ),
      );
    expect(ledger.map((r) => r[0])).toEqual([
      'Original (as tracked)',
      expect.stringContaining(`Restatement ${restatementId}`),
      'Current',
    ]);
    expect(ledger[2]?.[2]).toBe(eur(moved.after.cost_saved));
    await page.screenshot({ path: join(DIR, 'event-restated.png'), fullPage: true });

    await page.goto('/dashboard/settings');
    expect((await tableRows(page, '#assumption-history')).length).toBe(4);
    await page.screenshot({ path: join(DIR, 'settings-history.png'), fullPage: true });
    expect(e.problems).toEqual([]);
  });
});
