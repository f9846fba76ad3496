/// <reference lib="dom" />
// Code passed to page.evaluate runs in the browser.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { createApiKey } from '../../../src/orgs/api-keys.js';
import { DeliveryWorker } from '../../../src/webhooks/worker.js';
import { startReceiver, type Receiver } from '../../webhooks/receiver.js';
import { startE2E, tableRows, type E2E } from './browser.js';
import { seedEvents } from './seed.js';

interface Control {
  role: 'link' | 'button';
  name: string;
  /** Where it leads or what it submits (a link's URL, a form's action and fields). */
  target: string;
}

/**
 * The page's links and buttons with their accessible names, as this dashboard's markup gives
 * them (aria-label, else the text, visually hidden text included); checked against Chromium's
 * own accessibility tree below.
 */
async function controlsOf(page: Page): Promise<Control[]> {
  return page.evaluate(() =>
    Array.from(document.querySelectorAll('a[href], button'))
      .filter((el) => el.checkVisibility())
      .map((el) => {
        const name = (el.getAttribute('aria-label') ?? el.textContent ?? '').replace(/\s+/g, ' ').trim();
        if (el instanceof HTMLAnchorElement) return { role: 'link' as const, name, target: el.href };
        const copy = el.getAttribute('data-copy');
        const form = el.closest('form');
        const fields = form
          ? Array.from(form.querySelectorAll('input[type=hidden]'))
              .filter((i) => i.getAttribute('name') !== 'csrf_token')
              .map((i) => `${i.getAttribute('name') ?? ''}=${i.getAttribute('value') ?? ''}`)
          : [];
        const target = copy ? `copy #${copy}` : form ? `${form.action} ${fields.join('&')}` : 'none';
        return { role: 'button' as const, name, target };
      }),
  );
}

/** Names shared by controls that lead to different places: a screen reader cannot tell them apart. */
async function ambiguousNames(page: Page): Promise<string[]> {
  const controls = await controlsOf(page);
  const byName = new Map<string, Set<string>>();
  for (const c of controls) {
    const key = `${c.role} "${c.name}"`;
    byName.set(key, (byName.get(key) ?? new Set()).add(c.target));
  }
  // The names computed here are the browser's: each finds as many controls by role and name.
  for (const key of byName.keys()) {
    const c = controls.find((x) => `${x.role} "${x.name}"` === key);
    if (!c || c.name === '') continue;
    const found = await page.getByRole(c.role, { name: c.name, exact: true }).count();
    expect(found, key).toBe(controls.filter((x) => x.role === c.role && x.name === c.name).length);
  }
  const unnamed = controls.filter((c) => c.name === '').map((c) => `unnamed ${c.role} to ${c.target}`);
  return [
    ...unnamed,
    ...[...byName].filter(([, targets]) => targets.size > 1).map(([key, t]) => `${key} × ${t.size}`),
  ];
}

describe('names on the dashboard in Chromium', { timeout: 120_000 }, () => {
  let e: E2E;
  let page: Page;
  let receivers: Receiver[] = [];
  let webhookId = '';
  const post = async (url: string, payload?: object, method: 'POST' | 'PATCH' | 'DELETE' = 'POST') => {
    e.h.clock.advance(1000);
    const res = await e.h.request({ method, url, ...(payload ? { payload } : {}) });
    expect(res.statusCode, res.body).toBeLessThan(300);
    return res.json<Record<string, unknown>>();
  };
  const track = (task: string, agent = 'ops-bot', at?: string) =>
    post('/v1/track', {
      agent_id: agent,
      task_type: task,
      outcome: 'success',
      agent_cost: 0.4,
      ...(at ? { occurred_at: at } : {}),
    });

  beforeAll(async () => {
    e = await startE2E({
      env: { TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', TALLY_WEBHOOK_RETRY_DELAYS: '0' },
    });
    // Two failing receivers: two banners on the Overview, each with a link to its own log.
    receivers = [await startReceiver(500), await startReceiver(500)];
    for (const r of receivers) {
      const created = await post('/v1/webhooks', { url: r.url, event_types: ['event.created'] });
      webhookId = String(created.id);
    }
    await seedEvents(e.h);
    await post('/v1/settings', { fallback_baseline_minutes: 10 }, 'PATCH');
    await post('/v1/task-types', {
      key: 'vendor_call',
      display_name: 'Call a vendor',
      category: 'ops',
      default_baseline_minutes: 20,
    });
    await post('/v1/task-types', {
      key: 'legacy_intake',
      display_name: 'Intake a paper form',
      category: 'ops',
      default_baseline_minutes: 15,
    });
    await track('vendor_call');
    await track('legacy_intake');
    await post('/v1/task-types/legacy_intake', undefined, 'DELETE');
    await track('mystery_task');
    // Two events of one minute: their links in the list must still differ.
    const minute = new Date(e.h.clock.now().getTime() - 60_000).toISOString();
    await track('support_ticket_resolution', 'support-bot', minute);
    await track('legal_contract_review', 'contract-reviewer', minute);
    const worker = new DeliveryWorker(e.h.ctx, { onError: () => undefined });
    for (let i = 0; i < 6; i++) {
      await worker.runOnce();
      e.h.clock.advance(1000);
    }
    // Several keys: a Revoke button on each row.
    for (const name of ['support agent', 'billing agent'])
      await createApiKey({ ctx: e.h.ctx, orgId: e.h.org.id, name, scope: 'ingest' });
    ({ page } = await e.open());
    await e.signIn(page);
  });
  afterAll(async () => {
    for (const r of receivers) await r.close();
    await e?.close();
  });

  it('shows task types by display name with the key beside them; the CSV keeps the key', async () => {
    const types = await e.h.request({ method: 'GET', url: '/v1/task-types?include_archived=true' });
    const names = new Map(
      types
        .json<{ data: Array<{ key: string; display_name: string }> }>()
        .data.map((t) => [t.key, t.display_name]),
    );
    const shown = (key: string) =>
      key === 'mystery_task'
        ? key
        : key === 'legacy_intake'
          ? `${names.get(key) ?? '?'} ${key} · archived`
          : `${names.get(key) ?? '?'} ${key}`;

    await page.goto('/dashboard/reports?period=90d&group_by=task_type&sort=events');
    const rows = await tableRows(page, '#report-table');
    const keys = (
      await e.h.request({
        method: 'GET',
        url: '/v1/reports/time-saved?period=90d&group_by=task_type&sort=events',
      })
    )
      .json<{ rows: Array<{ group: { task_type: string } }> }>()
      .rows.map((r) => r.group.task_type);
    expect(keys).toEqual(expect.arrayContaining(['vendor_call', 'legacy_intake', 'mystery_task']));
    expect(rows.map((r) => r[0])).toEqual(keys.map(shown));
    expect(rows.map((r) => r[0])).toContain('Resolve a ticket end to end support_ticket_resolution');
    expect(rows.map((r) => r[0])).toContain('Call a vendor vendor_call');
    const bars = await page
      .locator('.report-chart svg:visible text.label')
      .evaluateAll((t) => t.map((x) => x.textContent ?? ''));
    expect(bars).toContain('Resolve a ticket end to end');
    expect(bars).toContain('mystery_task');

    // The export is the API's, keys and all.
    const href = (await page.getByRole('link', { name: 'Download CSV' }).getAttribute('href')) ?? '';
    const csv = await (await page.request.get(href)).text();
    expect(csv).toContain('\nsupport_ticket_resolution,');
    expect(csv).not.toContain('Resolve a ticket');

    await page.goto('/dashboard?period=90d');
    const top = await tableRows(page, 'section.panel:has(h3:text("Top task types")) table');
    expect(top.length).toBeGreaterThan(0);
    for (const r of top) expect(r[0]).toMatch(/^[A-Z].* [a-z][a-z0-9_]+$/);

    await page.goto('/dashboard/events');
    const events = await tableRows(page, 'main table');
    const list = (await e.h.request({ method: 'GET', url: '/v1/events?limit=50' })).json<{
      data: Array<{ task_type: string; event_id: string }>;
    }>().data;
    expect(events.map((r) => r[2])).toEqual(list.map((d) => shown(d.task_type)));

    const custom = list.find((d) => d.task_type === 'vendor_call');
    await page.goto(`/dashboard/events/${custom?.event_id ?? ''}`);
    const field = await page
      .locator('table.fields tr', { has: page.locator('th', { hasText: /^Task type$/ }) })
      .locator('td')
      .textContent();
    expect(field?.replace(/\s+/g, ' ').trim()).toBe('Call a vendor vendor_call');
  });

  it('gives each link and button of a list a name that says which one it is', async () => {
    // A named control of each list, found by that name alone.
    await page.goto('/dashboard/task-types');
    const manage = page.getByRole('link', { name: 'Manage Resolve a ticket end to end', exact: true });
    expect(await manage.getAttribute('href')).toBe('/dashboard/task-types/support_ticket_resolution');

    const event = (await e.h.request({ method: 'GET', url: '/v1/events?limit=1' })).json<{
      data: Array<{ event_id: string }>;
    }>().data[0];
    const pages = [
      '/dashboard?period=90d',
      '/dashboard/reports?period=90d&group_by=agent',
      '/dashboard/events',
      `/dashboard/events/${event?.event_id ?? ''}`,
      '/dashboard/task-types',
      '/dashboard/task-types/vendor_call',
      '/dashboard/webhooks',
      `/dashboard/webhooks/${webhookId}`,
      '/dashboard/usage',
      '/dashboard/settings',
    ];
    for (const url of pages) {
      await page.goto(url);
      expect(await ambiguousNames(page), url).toEqual([]);
    }
    expect(e.problems).toEqual([]);
  });
});
