/// <reference lib="dom" />
// Code passed to page.evaluate runs in the browser.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startE2E, type E2E } from '../dashboard/e2e/browser.js';
import { agentRun, exportRequest, type JsonSpan } from './otlp-json.js';
import { listEvents } from './support.js';

const XSS_AGENT = '<img src=x onerror=alert(1)>';

describe('the OpenTelemetry dashboard page in Chromium', { timeout: 90_000 }, () => {
  let e: E2E;
  let page: Page;
  const send = async (spans: JsonSpan[]) => {
    const res = await e.h.request({ method: 'POST', url: '/v1/traces', payload: exportRequest(spans) });
    expect(res.statusCode).toBe(200);
  };

  beforeAll(async () => {
    e = await startE2E();
    const at = e.h.clock.now().getTime();
    await send(agentRun({ endMs: at, agent: { 'gen_ai.agent.name': 'unmapped-bot' } }).all);
    await send(agentRun({ endMs: at, agent: { 'gen_ai.agent.name': XSS_AGENT } }).all);
    ({ page } = await e.open());
    await e.signIn(page);
  });
  afterAll(async () => e?.close());

  it('lists the runs without a task type, escaped, and how to send traces', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'OpenTelemetry' }).click();
    expect(await page.title()).toBe('OpenTelemetry · Tally');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('OpenTelemetry');
    const runs = page.getByRole('region', { name: 'Runs without a task type' });
    expect(await runs.getByRole('cell', { name: 'unmapped-bot', exact: true }).count()).toBe(1);
    // An agent name is text, never markup.
    expect(await runs.getByRole('cell', { name: XSS_AGENT, exact: true }).count()).toBe(1);
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.locator('#otel-env').textContent()).toContain(`${e.origin}/v1/traces`);
  });

  it('adds a rule for an unresolved run, which tracks it', async () => {
    await page.getByRole('link', { name: 'Add a rule for unmapped-bot' }).click();
    expect(await page.getByLabel('Match on', { exact: true }).inputValue()).toBe('agent_name');
    expect(await page.getByLabel('Value', { exact: true }).inputValue()).toBe('unmapped-bot');
    await page.getByLabel('Task type', { exact: true }).selectOption('support_ticket_triage');
    await page.getByRole('button', { name: 'Add rule', exact: true }).click();
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toContain('1 run without a task type tracked now');
    expect(
      await page
        .getByRole('region', { name: 'Runs without a task type' })
        .getByRole('cell', { name: 'unmapped-bot', exact: true })
        .count(),
    ).toBe(0);
    const rules = page.getByRole('region', { name: 'Mapping rules' });
    expect(await rules.getByRole('cell', { name: /task type support_ticket_triage/ }).count()).toBe(1);
    const events = (await listEvents(e.h)).filter((x) => x.agent_id === 'unmapped-bot');
    expect(events).toEqual([expect.objectContaining({ task_type: 'support_ticket_triage' })]);
  });

  it('refuses a rule the API refuses, as a notice', async () => {
    await page.getByLabel('Match on', { exact: true }).selectOption('resource_attribute');
    await page.getByLabel('Value', { exact: true }).fill('checkout');
    await page.getByLabel('Task type', { exact: true }).selectOption('dev_bug_fix');
    await page.getByRole('button', { name: 'Add rule', exact: true }).click();
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toContain('Not saved: attribute is required');
  });

  it('adds a client rule and deletes a rule', async () => {
    await page.getByLabel('Resource attribute that names the client').fill('tenant.id');
    await page.getByRole('button', { name: 'Add client rule' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Rule added.');
    await page.getByRole('button', { name: 'Delete the rule tenant.id' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Rule deleted.');
    const rules = await e.h.request({ method: 'GET', url: '/v1/otlp/mappings' });
    expect(rules.json<{ data: { kind: string }[] }>().data.map((r) => r.kind)).toEqual(['task_type']);
  });

  it('dismisses a run', async () => {
    await page.getByRole('button', { name: `Dismiss the run of ${XSS_AGENT}` }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Run dismissed.');
    const left = await e.h.request({ method: 'GET', url: '/v1/otlp/unresolved-runs' });
    expect(left.json()).toEqual({ data: [], next_cursor: null });
  });

  it('refuses a state change without the CSRF token', async () => {
    const res = await page.request.post('/dashboard/opentelemetry/unresolved/retry', {
      form: { csrf_token: 'forged' },
      headers: { origin: e.origin },
    });
    expect(res.status()).toBe(403);
  });

  it('fits a 390 px wide screen', async () => {
    const { page: phone } = await e.open({ width: 390, height: 844 });
    await e.signIn(phone);
    await phone.goto('/dashboard/opentelemetry');
    const width = await phone.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(390);
    expect(await phone.getByRole('button', { name: 'Add rule', exact: true }).isVisible()).toBe(true);
  });

  it('never left the origin and logged no console error', () => {
    expect(e.problems).toEqual([]);
  });
});
