/// <reference lib="dom" />
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decimal } from '../../../src/dashboard/format.js';
import { startE2E, tableRows, type E2E } from './browser.js';

// `TALLY_SCREENSHOTS=/tmp/shots` keeps the pictures (to look at them).
const KEEP = process.env.TALLY_SCREENSHOTS;
const DIR = KEEP ?? mkdtempSync(join(tmpdir(), 'tally-review-shots-'));

describe('the review queue and an event’s ledger in Chromium', { timeout: 120_000 }, () => {
  let e: E2E;
  let page: Page;
  const ids: string[] = [];

  beforeAll(async () => {
    e = await startE2E();
    for (const [agent, outcome] of [
      ['support-bot', 'needs_review'],
      ['support-bot', 'success'],
      ['triage-bot', 'needs_review'],
    ] as const) {
      const res = await e.h.request({
        method: 'POST',
        url: '/v1/track',
        payload: {
          agent_id: agent,
          task_type: 'support_ticket_reply',
          outcome,
          human_baseline_minutes: 60,
          agent_cost: 0.5,
        },
      });
      expect(res.statusCode, res.body).toBe(201);
      ids.push(res.json<{ event_id: string }>().event_id);
    }
    ({ page } = await e.open());
    await e.signIn(page);
  });
  afterAll(async () => {
    await e?.close();
    if (!KEEP) rmSync(DIR, { recursive: true, force: true });
  });

  it('lists the events awaiting review, each with a form that records one', async () => {
    await page.goto('/dashboard/events');
    await page
      .getByRole('navigation', { name: 'Events sections' })
      .getByRole('link', { name: 'Review queue' })
      .click();
    await page.waitForURL((url) => url.pathname === '/dashboard/events/review-queue');
    expect(await page.title()).toBe('Review queue · Tally');
    const items = page.locator('ul.review-queue > li');
    expect(await items.count()).toBe(2);
    await page.screenshot({ path: `${DIR}/review-queue.png`, fullPage: true });
    expect(statSync(`${DIR}/review-queue.png`).size).toBeGreaterThan(5_000);

    const form = page.locator(`form[action="/dashboard/events/${ids[0]}/review"]`);
    await form.getByLabel('Review minutes').fill('15');
    await form.getByLabel('Verdict').selectOption('accepted');
    await form.getByLabel('Reviewer').fill('ana');
    await form.getByLabel('Note').fill('checked the reply');
    await form.getByRole('button', { name: 'Record review' }).click();
    await page.waitForURL((url) => url.pathname === '/dashboard/events/review-queue');
    expect(await page.locator('body').textContent()).toContain('Review saved');
    expect(await page.locator('ul.review-queue > li').count()).toBe(1);

    // The API sees the same review and figures.
    const ledger = await e.h.request({ method: 'GET', url: `/v1/events/${ids[0]}/adjustments` });
    expect(ledger.json()).toMatchObject({
      current: { hours_saved: 0.75, review_hours: 0.25 },
      review: { verdict: 'accepted', reviewer: 'ana', note: 'checked the reply', review_minutes: 15 },
    });

    // A bad value is refused with a notice, and nothing is recorded.
    const other = page.locator(`form[action="/dashboard/events/${ids[2]}/review"]`);
    await other.getByLabel('Review minutes').evaluate((input: HTMLInputElement) => {
      input.removeAttribute('min');
      input.value = '-5';
    });
    await other.getByRole('button', { name: 'Record review' }).click();
    await page.waitForURL((url) => url.pathname === '/dashboard/events/review-queue');
    expect(await page.locator('body').textContent()).toContain('Not saved');
    expect(await page.locator('ul.review-queue > li').count()).toBe(1);
    expect(e.problems).toEqual([]);
  });

  it('shows an event’s review, original figures, adjustments and current figures', async () => {
    await page.goto(`/dashboard/events/${ids[0]}`);
    const review = page.locator('section[aria-labelledby="review-heading"]');
    expect((await review.textContent())?.replace(/\s+/g, ' ')).toContain('Accepted after 15 minutes by ana');
    const rows = await tableRows(page, 'table.ledger');
    expect(rows).toHaveLength(2);
    // Original: half the baseline credited; the review's entry: +0.25 h saved, 0.25 h of review.
    expect(rows[0]?.[0]).toBe(decimal(0.5));
    expect([rows[1]?.[0], rows[1]?.[4]]).toEqual([decimal(0.25), decimal(0.25)]);
    const body = (await page.locator('table.ledger').textContent())?.replace(/\s+/g, ' ') ?? '';
    expect(body).toContain('Original (as tracked)');
    expect(body).toContain('Current');
    await page.screenshot({ path: `${DIR}/event-ledger.png`, fullPage: true });

    // Reviewed again from the event page: the second entry is the difference from the first.
    const form = page.locator(`form[action="/dashboard/events/${ids[0]}/review"]`);
    await page.getByText('Review again (replaces this review)').click();
    await form.getByLabel('Review minutes').fill('30');
    await form.getByLabel('Verdict').selectOption('rejected');
    await form.getByRole('button', { name: 'Save review' }).click();
    await page.waitForURL((url) => url.pathname === `/dashboard/events/${ids[0]}`);
    expect((await tableRows(page, 'table.ledger')).length).toBe(3);
    expect((await review.textContent())?.replace(/\s+/g, ' ')).toContain('Rejected after 30 minutes');

    // Not reviewed yet.
    await page.goto(`/dashboard/events/${ids[1]}`);
    expect(await review.textContent()).toContain('Not reviewed.');
    expect(await page.locator('table.ledger').textContent()).toContain('No adjustments.');
    await page.screenshot({ path: `${DIR}/event-not-reviewed.png`, fullPage: true });
    expect(e.problems).toEqual([]);
  });
});
