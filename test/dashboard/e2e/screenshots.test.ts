/// <reference lib="dom" />
// Code passed to page.evaluate runs in the browser.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { DeliveryWorker } from '../../../src/webhooks/worker.js';
import { startReceiver, type Receiver } from '../../webhooks/receiver.js';
import { startE2E, tableRows, type E2E } from './browser.js';
import { seedRealistic } from './realistic-seed.js';

// Renders every page at desktop and phone size with a believable organisation's data and checks
// that nothing spills out of the page. `TALLY_SCREENSHOTS=/tmp/shots npx vitest run
// test/dashboard/e2e/screenshots.test.ts` keeps the pictures, to look at them; otherwise they go
// to a temporary folder that is removed. `TALLY_README_SCREENSHOT=docs/dashboard-overview.png`
// (same command) writes the README's picture of the Overview.
const KEEP = process.env.TALLY_SCREENSHOTS;
const README_SHOT = process.env.TALLY_README_SCREENSHOT;
const DIR = KEEP ?? mkdtempSync(join(tmpdir(), 'tally-shots-'));

/** Elements that reach past the page's right edge without a scrolling box of their own. */
async function spilled(page: Page): Promise<string[]> {
  return page.evaluate(() => {
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
}

/** Boxes on screen, within `scope`, whose content is wider than they are (sideways scrolling). */
async function scrollingBoxes(page: Page, scope = 'main'): Promise<string[]> {
  return page.evaluate((selector) => {
    const roots = Array.from(document.querySelectorAll(selector));
    return roots
      .flatMap((root) => [root, ...Array.from(root.querySelectorAll('*'))])
      .filter((el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX))
      .filter((el) => el.checkVisibility())
      .filter((el) => el.scrollWidth > el.clientWidth + 1)
      .map((el) => `${el.tagName}.${el.className} ${el.scrollWidth}>${el.clientWidth}`);
  }, scope);
}

describe('dashboard screenshots', () => {
  let e: E2E;
  let receivers: Receiver[] = [];
  let worker: DeliveryWorker;
  const webhookIds: string[] = [];
  const track = async (agent: string, task: string) => {
    e.h.clock.advance(1000);
    const res = await e.h.request({
      method: 'POST',
      url: '/v1/track',
      payload: { agent_id: agent, task_type: task, outcome: 'success', agent_cost: 0.21 },
    });
    expect(res.statusCode, res.body).toBe(201);
  };
  const addWebhook = async (url: string, description: string) => {
    const res = await e.h.request({
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url, event_types: ['event.created', 'weekly.digest'], description },
    });
    expect(res.statusCode, res.body).toBe(201);
    webhookIds.push(res.json<{ id: string }>().id);
  };

  beforeAll(async () => {
    e = await startE2E({
      env: { TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', TALLY_WEBHOOK_RETRY_DELAYS: '0' },
    });
    receivers = [await startReceiver(200), await startReceiver(500)];
    worker = new DeliveryWorker(e.h.ctx, { onError: () => undefined });
    const seeded = await seedRealistic(e.h);
    expect(seeded).toBeGreaterThan(1000);
    // Webhooks added after the history: they receive only the day's new events.
    await addWebhook(receivers[0]?.url ?? '', 'ERP sync');
    await track('support-bot', 'support_ticket_reply');
    await track('invoice-agent', 'ops_invoice_processing');
    await worker.runOnce();
  });
  afterAll(async () => {
    for (const r of receivers) await r.close();
    await e?.close();
    if (!KEEP) rmSync(DIR, { recursive: true, force: true });
  });

  it("renders the README's Overview with realistic figures", async () => {
    const { page } = await e.open({ width: 1280, height: 800 });
    await e.signIn(page);
    await page.goto('/dashboard?period=30d');
    // Agents, task types by name and clients as a team would have them; no test payloads.
    const text = (await page.locator('main').textContent()) ?? '';
    for (const expected of ['support-bot', 'contract-reviewer', 'invoice-agent', 'northwind', 'globex'])
      expect(text).toContain(expected);
    const types = await tableRows(page, 'section.panel:has(h3:text("Top task types")) table');
    expect(types.length).toBe(5);
    for (const [type] of types) expect(type).toMatch(/^[A-Z][a-z].* [a-z]+(_[a-z]+)+$/);
    expect(text).not.toMatch(/<img|onerror|alert\(/);
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await spilled(page)).toEqual([]);
    expect(await scrollingBoxes(page)).toEqual([]);
    const path = README_SHOT ?? `${DIR}/readme-overview.png`;
    await page.screenshot({ path, fullPage: true });
    expect(statSync(path).size).toBeGreaterThan(20_000);
  });

  it('saves every page at 1280×800 and 390×844', async () => {
    // A receiver that keeps failing: a failing webhook, its banner and its delivery log.
    await addWebhook(receivers[1]?.url ?? '', 'Finance data warehouse');
    for (let i = 0; i < 6; i++) {
      await track('sales-assistant', 'sales_outreach_email');
      await worker.runOnce();
    }
    const events = await e.h.request({ method: 'GET', url: '/v1/events?limit=1&agent_id=contract-reviewer' });
    const eventId = events.json<{ data: Array<{ event_id: string }> }>().data[0]?.event_id ?? '';
    // What a phone shows whole; other tables there (reports, events, logs) scroll in their box.
    const FITS: Record<string, string> = {
      overview: '.cards, .grid3',
      event: 'main',
      'task-types': '.table-wrap:has(table.catalogue)',
      'task-type': 'main',
      usage: 'main',
    };
    const pages = [
      ['overview', '/dashboard'],
      ['overview-90d', '/dashboard?period=90d'],
      ['reports', '/dashboard/reports?period=90d&group_by=agent&sort=net_saved'],
      ['reports-types', '/dashboard/reports?period=30d&group_by=task_type,client&sort=net_saved&top=12'],
      ['reports-week', '/dashboard/reports?period=90d&group_by=week&sort=cost_saved'],
      ['events', '/dashboard/events'],
      ['event', `/dashboard/events/${eventId}`],
      ['task-types', '/dashboard/task-types'],
      ['task-type', '/dashboard/task-types/support_ticket_reply'],
      ['webhooks', '/dashboard/webhooks'],
      ['webhook', `/dashboard/webhooks/${webhookIds[1] ?? ''}`],
      ['usage', '/dashboard/usage'],
      ['settings', '/dashboard/settings'],
      ['budgets', '/dashboard/budgets'],
      ['budgets-payback', '/dashboard/budgets/payback'],
      ['budgets-emails', '/dashboard/budgets/emails'],
    ];
    for (const [size, viewport] of [
      ['desktop', { width: 1280, height: 800 }],
      ['phone', { width: 390, height: 844 }],
    ] as const) {
      const { page } = await e.open(viewport);
      await page.goto('/dashboard/login');
      await page.screenshot({ path: `${DIR}/login-${size}.png` });
      await e.signIn(page);
      for (const [name, url] of pages) {
        await page.goto(url ?? '/dashboard');
        // Wide content may scroll inside its own box (tables, code); the page itself must not.
        expect(await spilled(page), `${name} at ${size} spills out of the page`).toEqual([]);
        // Pages whose tables are narrow enough to show whole, without scrolling sideways.
        const scope = size === 'desktop' ? 'main' : FITS[name ?? ''];
        if (scope) {
          const scrolling = await scrollingBoxes(page, scope);
          // Code samples may scroll; tables must not.
          expect(
            scrolling.filter((s) => !s.startsWith('PRE.')),
            `${name} at ${size}`,
          ).toEqual([]);
        }
        const path = `${DIR}/${name}-${size}.png`;
        await page.screenshot({ path, fullPage: true });
        expect(statSync(path).size).toBeGreaterThan(5_000);
      }
    }
    expect(e.problems).toEqual([]);
  }, 180_000);
});
