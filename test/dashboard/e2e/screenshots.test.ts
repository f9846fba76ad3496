/// <reference lib="dom" />
// Code passed to page.evaluate runs in the browser.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryWorker } from '../../../src/webhooks/worker.js';
import { startReceiver, type Receiver } from '../../webhooks/receiver.js';
import { startE2E, type E2E } from './browser.js';
import { seedEvents } from './seed.js';

// Renders every page at desktop and phone size with realistic data and checks that nothing
// spills out of the page. `TALLY_SCREENSHOTS=/tmp/shots npx vitest run
// test/dashboard/e2e/screenshots.test.ts` keeps the pictures, to look at them (README:
// docs/dashboard-overview.png); otherwise they go to a temporary folder that is removed.
const KEEP = process.env.TALLY_SCREENSHOTS;
const DIR = KEEP ?? mkdtempSync(join(tmpdir(), 'tally-shots-'));

describe('dashboard screenshots', () => {
  let e: E2E;
  let receivers: Receiver[] = [];
  let webhookId = '';
  beforeAll(async () => {
    e = await startE2E({
      env: { TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', TALLY_WEBHOOK_RETRY_DELAYS: '0' },
    });
    receivers = [await startReceiver(200), await startReceiver(500)];
    for (const r of receivers) {
      const res = await e.h.request({
        method: 'POST',
        url: '/v1/webhooks',
        payload: { url: r.url, event_types: ['event.created'], description: 'Finance feed' },
      });
      webhookId = res.json<{ id: string }>().id;
    }
    await seedEvents(e.h, e.h.org.apiKey, 400);
    const worker = new DeliveryWorker(e.h.ctx, { onError: () => undefined });
    for (let i = 0; i < 3; i++) await worker.runOnce();
  });
  afterAll(async () => {
    for (const r of receivers) await r.close();
    await e?.close();
    if (!KEEP) rmSync(DIR, { recursive: true, force: true });
  });

  it('saves every page at 1280×800 and 390×844', async () => {
    const events = await e.h.request({ method: 'GET', url: '/v1/events?limit=1' });
    const eventId = events.json<{ data: Array<{ event_id: string }> }>().data[0]?.event_id ?? '';
    const pages = [
      ['overview', '/dashboard'],
      ['reports', '/dashboard/reports?period=90d&group_by=agent&sort=net_saved'],
      ['reports-week', '/dashboard/reports?period=90d&group_by=week&sort=cost_saved'],
      ['events', '/dashboard/events'],
      ['event', `/dashboard/events/${eventId}`],
      ['task-types', '/dashboard/task-types'],
      ['task-type', '/dashboard/task-types/support_ticket_reply'],
      ['webhooks', '/dashboard/webhooks'],
      ['webhook', `/dashboard/webhooks/${webhookId}`],
      ['usage', '/dashboard/usage'],
      ['settings', '/dashboard/settings'],
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
        const wide = await page.evaluate(() => {
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
        const path = `${DIR}/${name}-${size}.png`;
        await page.screenshot({ path, fullPage: size === 'desktop' });
        expect(statSync(path).size).toBeGreaterThan(5_000);
      }
    }
    expect(e.problems).toEqual([]);
  }, 120_000);
});
