/// <reference lib="dom" />
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { DeliveryWorker } from '../../../src/webhooks/worker.js';
import { startReceiver, type Receiver } from '../../webhooks/receiver.js';
import { startE2E, tableRows, type E2E } from './browser.js';

describe('managing the organisation from the dashboard in Chromium', { timeout: 90_000 }, () => {
  let e: E2E;
  let page: Page;
  let ok: Receiver;
  let broken: Receiver;
  let worker: DeliveryWorker;
  const api = async <T>(url: string, apiKey?: string) => {
    const res = await e.h.request({ method: 'GET', url, ...(apiKey ? { apiKey } : {}) });
    return { status: res.statusCode, body: res.json<T>() };
  };

  beforeAll(async () => {
    e = await startE2E({
      env: { TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', TALLY_WEBHOOK_RETRY_DELAYS: '0' },
    });
    ok = await startReceiver(200);
    broken = await startReceiver(500);
    worker = new DeliveryWorker(e.h.ctx, { onError: () => undefined });
    ({ page } = await e.open());
    await e.signIn(page);
  });
  afterAll(async () => {
    await ok?.close();
    await broken?.close();
    await e?.close();
  });

  it('creates a custom task type and archives it', async () => {
    await page.goto('/dashboard/task-types');
    await page.getByLabel('Key', { exact: true }).fill('vendor_call');
    await page.getByLabel('Display name').fill('Call a vendor');
    await page.getByLabel('Category').selectOption('ops');
    await page.getByLabel('Baseline minutes').fill('25');
    await page.getByRole('button', { name: 'Create task type' }).click();
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toContain('Created the custom task type vendor_call');
    const created = await api<{ data: Array<{ key: string; status: string; kind: string }> }>(
      '/v1/task-types',
    );
    expect(created.body.data.find((t) => t.key === 'vendor_call')).toMatchObject({
      kind: 'custom',
      status: 'active',
    });

    await page.getByRole('link', { name: 'Manage Call a vendor' }).click();
    await page.getByRole('button', { name: 'Archive task type' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Archived vendor_call');
    expect(await page.locator('.badge.archived').count()).toBe(1);
    const archived = await api<{ data: Array<{ key: string; status: string }> }>(
      '/v1/task-types?include_archived=true',
    );
    expect(archived.body.data.find((t) => t.key === 'vendor_call')?.status).toBe('archived');
  });

  it('sets an override beside the original figure and removes it', async () => {
    await page.goto('/dashboard/task-types/support_ticket_reply');
    expect(await page.getByText('Original: 8 minutes').count()).toBe(1);
    await page.getByLabel('Baseline minutes').fill('11');
    await page.getByLabel('Reason').fill('Measured in our Q3 time study');
    await page.getByRole('button', { name: 'Save override' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Override saved');
    const one = await api<{
      data: Array<{ key: string; effective_baseline_minutes: number; override: unknown }>;
    }>('/v1/task-types?category=support');
    expect(one.body.data.find((t) => t.key === 'support_ticket_reply')?.effective_baseline_minutes).toBe(11);
    expect((await page.locator('table.fields').textContent())?.replace(/\s+/g, ' ')).toContain(
      '(original 8)',
    );

    await page.getByRole('button', { name: 'Remove override' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Override removed');
    const two = await api<{ data: Array<{ key: string; override: unknown }> }>(
      '/v1/task-types?category=support',
    );
    expect(two.body.data.find((t) => t.key === 'support_ticket_reply')?.override).toBeNull();

    // Every change is in the audit log at the bottom of the list.
    await page.goto('/dashboard/task-types');
    const audit = await tableRows(page, 'section.panel:has(h2:text("Audit log")) table');
    // One manual-clock millisecond: the order within it is not the point here.
    expect(audit.map((r) => r[1]).sort()).toEqual([
      'task_type.archived',
      'task_type.created',
      'task_type.override_removed',
      'task_type.override_set',
    ]);
    expect(audit.find((r) => r[1] === 'task_type.override_set')?.[4]).toBe('Measured in our Q3 time study');
  });

  it('creates a webhook and shows its secret only once, with a copy button', async () => {
    await page.goto('/dashboard/webhooks');
    await page.getByLabel('Endpoint URL').fill(ok.url);
    await page.getByLabel('Description (optional)').fill('Finance feed');
    await page.getByLabel('agent.first_event').check();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    const secret = (await page.locator('#new-secret').textContent()) ?? '';
    expect(secret).toMatch(/^whsec_/);
    expect(await page.getByRole('button', { name: 'Copy secret' }).count()).toBe(1);
    const list = await api<{ data: Array<{ url: string; event_types: string[] }> }>('/v1/webhooks');
    expect(list.body.data[0]).toMatchObject({
      url: ok.url,
      event_types: ['event.created', 'agent.first_event'],
    });
    await page.goto('/dashboard/webhooks');
    expect(await page.content()).not.toContain(secret);
    expect(await page.getByRole('link', { name: ok.url }).count()).toBe(1);
  });

  it('sends a test ping that reaches a real receiver and shows its result in the delivery log', async () => {
    await page.goto('/dashboard/webhooks');
    await page.getByRole('link', { name: ok.url }).click();
    await page.getByRole('button', { name: 'Send test ping' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Test ping');
    await worker.runOnce();
    expect(ok.received.map((r) => r.headers['x-tally-event-type'])).toEqual(['test.ping']);
    await page.reload();
    const log = page.locator('details.delivery').first();
    expect(await log.locator('summary').textContent()).toContain('test.ping');
    expect(await log.locator('summary').textContent()).toContain('Delivered');
    const attempt = (await tableRows(page, 'details.delivery >> nth=0 >> table'))[0] ?? [];
    expect(attempt[2]).toBe('✓ Succeeded');
    expect(attempt[3]).toBe('200');
    expect(attempt[4]).toMatch(/^\d[\d,]* ms$/);
    expect(attempt[5]).toContain('ok ok');
  });

  it('shows a failing delivery with its status code and body, a failing webhook as failing, and reactivates one', async () => {
    await page.goto('/dashboard/webhooks');
    await page.getByLabel('Endpoint URL').fill(broken.url);
    await page.getByRole('button', { name: 'Add webhook' }).click();
    const hook = (await api<{ data: Array<{ id: string; url: string }> }>('/v1/webhooks')).body.data.find(
      (w) => w.url === broken.url,
    );
    await page.goto(`/dashboard/webhooks/${hook?.id ?? ''}`);
    await page.getByRole('button', { name: 'Send test ping' }).click();
    // The click submits a form: reloading before its answer arrives races that navigation.
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Test ping');
    await worker.runOnce();
    await page.reload();
    const attempt = (await tableRows(page, 'details.delivery >> nth=0 >> table'))[0] ?? [];
    expect(attempt[2]).toBe('✗ Failed');
    expect(attempt[3]).toBe('500');
    expect(attempt[5]).toContain('receiver broke');

    // Deliveries of tracked events fail until the webhook counts as failing (5 in a row).
    for (let i = 0; i < 5; i++) {
      e.h.clock.advance(1000);
      const res = await e.h.request({
        method: 'POST',
        url: '/v1/track',
        payload: { agent_id: `agent-${i}`, task_type: 'support_ticket_reply', outcome: 'success' },
      });
      expect(res.statusCode).toBe(201);
    }
    for (let i = 0; i < 5; i++) {
      await worker.runOnce();
      e.h.clock.advance(1000);
    }
    await page.goto('/dashboard/webhooks');
    const rows = await tableRows(page, 'main table');
    const row = rows.find((r) => r[0]?.startsWith(broken.url));
    expect(row?.[1]).toBe('▲ Failing');
    expect(Number(row?.[3])).toBeGreaterThanOrEqual(5);
    await page.goto('/dashboard');
    expect(await page.getByRole('alert').filter({ hasText: 'Webhook failing' }).count()).toBe(1);

    await page.goto(`/dashboard/webhooks/${hook?.id ?? ''}`);
    await page.getByRole('button', { name: 'Reactivate' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('reactivated');
    const after = await api<{ status: string; consecutive_failures: number }>(
      `/v1/webhooks/${hook?.id ?? ''}`,
    );
    expect(after.body).toMatchObject({ status: 'active', consecutive_failures: 0 });
  });

  it('edits a webhook and deletes one after a confirmation step', async () => {
    await page.goto('/dashboard/webhooks');
    await page.getByRole('link', { name: broken.url }).click();
    await page.getByLabel('Description').fill('Staging receiver');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Webhook saved');
    await page.getByRole('link', { name: 'Delete…' }).click();
    expect(await page.getByRole('heading', { level: 2 }).first().textContent()).toContain(
      'Delete the webhook',
    );
    await page.getByRole('button', { name: 'Delete webhook' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Webhook deleted');
    const list = await api<{ data: Array<{ url: string }> }>('/v1/webhooks');
    expect(list.body.data.map((w) => w.url)).toEqual([ok.url]);
  });

  it('changes settings, with the currency read-only once events exist', async () => {
    await page.goto('/dashboard/settings');
    expect(await page.getByLabel('Currency').getAttribute('readonly')).not.toBeNull();
    await page.getByLabel('Name', { exact: true }).fill('Acme Finance');
    await page.getByLabel('Default hourly rate (EUR)').fill('64.5');
    await page.getByLabel('legal').fill('120');
    await page.getByLabel('Needs review').fill('0.4');
    await page.getByLabel('Fallback baseline (minutes)').fill('10');
    await page.getByLabel('Admin e-mails').fill('ops@acme.test\nfinance@acme.test');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Settings saved');
    const settings = await api<Record<string, unknown>>('/v1/settings');
    expect(settings.body).toMatchObject({
      name: 'Acme Finance',
      default_hourly_rate: 64.5,
      category_hourly_rates: { legal: 120 },
      outcome_credit: { success: 1, needs_review: 0.4, failure: 0 },
      fallback_baseline_minutes: 10,
      admin_emails: ['ops@acme.test', 'finance@acme.test'],
    });
    expect(await page.getByLabel('Organisation').textContent()).toContain('Acme Finance');

    // The browser checks ranges itself (max="1"); what only the server knows is refused in words.
    expect(await page.getByLabel('Needs review').getAttribute('max')).toBe('1');
    await page.getByLabel('Admin e-mails').fill('not an address');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Not saved');
    expect((await api<{ admin_emails: string[] }>('/v1/settings')).body.admin_emails).toHaveLength(2);
  });

  it('creates an ingest key shown once and revokes it', async () => {
    await page.goto('/dashboard/settings');
    await page.getByLabel('Key name').fill('support agent');
    await page.getByLabel('Scope').selectOption('ingest');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.locator('#new-key').textContent()) ?? '';
    expect(key).toMatch(/^tally_live_[A-Za-z0-9]{8}_[A-Za-z0-9]{48}$/);
    const id = key.slice(11, 19);
    expect((await api('/v1/settings', key)).status).toBe(403);
    const track = await e.h.request({
      method: 'POST',
      url: '/v1/track',
      apiKey: key,
      payload: { agent_id: 'a', task_type: 'support_ticket_reply', outcome: 'success' },
    });
    expect(track.statusCode).toBe(201);

    await page.goto('/dashboard/settings');
    expect(await page.content()).not.toContain(key);
    const row = (await tableRows(page, 'main section:has(h2:text("API keys")) table')).find(
      (r) => r[0] === id,
    );
    expect(row?.[1]).toBe('support agent');
    expect(row?.[2]).toBe('ingest');
    await page.getByRole('button', { name: `Revoke key ${id}` }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain(`Key ${id} revoked`);
    expect((await api('/v1/task-types', key)).status).toBe(401);
    const revoked = (await tableRows(page, 'main section:has(h2:text("API keys")) table')).find(
      (r) => r[0] === id,
    );
    expect(revoked?.[5]).toMatch(/UTC$/);
  });

  it('explains on the Free plan which plan unlocks each part, never an error page', async () => {
    const free = await e.h.createOrg({ plan: 'free' });
    const { page: p } = await e.open();
    await e.signIn(p, free.apiKey);
    expect(await p.getByText('Track your first event').count()).toBe(1);
    expect(await p.locator('#first-event').textContent()).toContain(`${e.origin}/v1/track`);
    for (const [url, heading] of [
      ['/dashboard', 'Reports of hours and money saved needs the Pro plan'],
      ['/dashboard/reports', 'Reports needs the Pro plan'],
      ['/dashboard/webhooks', 'Webhooks needs the Pro plan'],
      ['/dashboard/task-types', 'The audit log needs the Pro plan'],
      ['/dashboard/task-types/dev_code_review', 'Changing task types needs the Pro plan'],
    ] as const) {
      const res = await p.goto(url);
      expect(res?.status(), url).toBe(200);
      expect(await p.getByRole('heading', { name: heading }).count(), url).toBe(1);
      expect(await p.getByLabel('Organisation').textContent()).toContain('Free plan');
    }
    await p.goto('/dashboard/usage');
    expect(await p.locator('.meter-text').textContent()).toContain('of 10,000 included events');
  });

  it('never left the origin and logged no console error', () => {
    expect(e.problems).toEqual([]);
  });
});
