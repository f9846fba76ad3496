/// <reference lib="dom" />
// Code passed to page.evaluate runs in the browser.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { CONTENT_SECURITY_POLICY } from '../../src/dashboard/security.js';
import { startE2E, type E2E } from '../dashboard/e2e/browser.js';

interface OpenApi {
  paths: Record<string, Record<string, { operationId?: string }>>;
}

// `TALLY_SCREENSHOTS=/tmp/shots` keeps a picture of the rendered reference, to look at it.
const SHOTS = process.env.TALLY_SCREENSHOTS;

describe('the API reference at /reference', { timeout: 120_000 }, () => {
  let e: E2E;
  let page: Page;
  let doc: OpenApi;

  beforeAll(async () => {
    e = await startE2E();
    ({ page } = await e.open());
    // Content-Security-Policy violations, as the page itself sees them.
    await page.addInitScript(() => {
      const seen: string[] = [];
      Object.assign(window, { cspViolations: seen });
      document.addEventListener('securitypolicyviolation', (event) =>
        seen.push(`${event.violatedDirective} ${event.blockedURI}`),
      );
    });
    const res = await e.h.request({ method: 'GET', url: '/openapi.json' });
    doc = res.json<OpenApi>();
  });
  afterAll(async () => e?.close());

  const violations = () =>
    page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations);

  it('is served with the dashboard’s strict policy, its assets from this server', async () => {
    const res = await e.h.request({ method: 'GET', url: '/reference' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).not.toMatch(/<style|style=|<script>/);
    const scripts = [...res.body.matchAll(/<(?:script|link)[^>]+(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts.length).toBeGreaterThanOrEqual(4);
    for (const url of scripts) {
      expect(url?.startsWith('/')).toBe(true);
      const asset = await e.h.request({ method: 'GET', url: url ?? '' });
      expect(asset.statusCode, url).toBe(200);
      expect(asset.body.length, url).toBeGreaterThan(0);
    }
    expect((await e.h.request({ method: 'GET', url: '/reference/assets/package.json' })).statusCode).toBe(
      404,
    );
    expect(
      (await e.h.request({ method: 'GET', url: '/reference/assets/..%2Fpackage.json' })).statusCode,
    ).toBe(404);
    expect(Object.keys(doc.paths).some((path) => path.startsWith('/reference'))).toBe(false);
  });

  it('renders every operation of /openapi.json in Chromium, with no error and nothing from elsewhere', async () => {
    await page.goto('/reference');
    const track = page.locator('.opblock-post', { hasText: '/v1/track' }).first();
    await track.getByText('/v1/track', { exact: true }).waitFor({ state: 'visible' });
    expect(await page.title()).toBe('API reference · Tally');
    const expected = Object.entries(doc.paths)
      .flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`))
      .sort();
    expect(expected).toContain('POST /v1/track');
    const shown = await page
      .locator('.opblock-summary')
      .evaluateAll((blocks) =>
        blocks.map(
          (block) =>
            `${block.querySelector('.opblock-summary-method')?.textContent ?? ''} ${
              block.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? ''
            }`,
        ),
      );
    expect(shown.sort()).toEqual(expected);
    if (SHOTS) {
      mkdirSync(SHOTS, { recursive: true });
      await page.screenshot({ path: join(SHOTS, 'reference.png') });
    }
    expect(await violations()).toEqual([]);
    expect(e.problems).toEqual([]);
  });

  it('tries POST /v1/track against this very server with the key given to Authorize', async () => {
    await page.goto('/reference');
    await page.getByRole('button', { name: 'Authorize' }).first().click();
    const dialog = page.locator('.dialog-ux');
    await dialog.locator('#auth-bearer-value').fill(e.h.org.apiKey);
    await dialog.getByRole('button', { name: 'Apply credentials' }).click();
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();

    const track = page.locator('#operations-tracking-trackEvent');
    await track.locator('.opblock-summary').click();
    await track.getByRole('button', { name: 'Try it out' }).click();
    await track
      .locator('textarea.body-param__text')
      .fill(
        JSON.stringify({ agent_id: 'reference-bot', task_type: 'support_ticket_reply', outcome: 'success' }),
      );
    await track.getByRole('button', { name: 'Execute' }).click();
    const status = track.locator('.live-responses-table tbody .response-col_status').first();
    await expect.poll(() => status.textContent(), { timeout: 20_000 }).toContain('201');

    const events = await e.h.request({ method: 'GET', url: '/v1/events?agent_id=reference-bot' });
    expect(events.json<{ data: unknown[] }>().data).toHaveLength(1);
    expect(await violations()).toEqual([]);
    expect(e.problems).toEqual([]);
  });

  it('is linked from every dashboard page', async () => {
    await e.signIn(page);
    await page.getByRole('link', { name: 'API reference' }).click();
    await page.waitForURL((url) => url.pathname === '/reference');
    await page.getByText('/v1/track', { exact: true }).first().waitFor({ state: 'visible' });
    expect(e.problems).toEqual([]);
  });
});
