/// <reference lib="dom" />
// Code passed to page.evaluate runs in the browser.
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createHarness, type Harness, type HarnessOptions } from '../../support/harness.js';

export const CHROMIUM = process.env.TALLY_TEST_CHROMIUM ?? '/usr/bin/chromium';

/** A real server on a loopback port, a Chromium and the browser-side problems seen so far. */
export interface E2E {
  h: Harness;
  origin: string;
  browser: Browser;
  /** Requests to any other origin, console errors and page errors, per page opened. */
  problems: string[];
  open(viewport?: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }>;
  signIn(page: Page, apiKey?: string): Promise<void>;
  /** Signs a person in with e-mail and password. */
  signInAs(page: Page, email: string, password: string): Promise<void>;
  close(): Promise<void>;
}

export async function startE2E(options: HarnessOptions = {}): Promise<E2E> {
  const h = await createHarness('sqlite', { now: '2026-11-20T12:00:00.000Z', ...options });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = h.app.server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // launch() gives every run a fresh, throw-away profile directory of its own.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const problems: string[] = [];
  const contexts: BrowserContext[] = [];
  return {
    h,
    origin,
    browser,
    problems,
    async open(viewport = { width: 1280, height: 800 }) {
      const context = await browser.newContext({ viewport, baseURL: origin });
      contexts.push(context);
      const page = await context.newPage();
      page.on('request', (request) => {
        const url = request.url();
        if (!url.startsWith(`${origin}/`) && !url.startsWith('data:')) problems.push(`request to ${url}`);
      });
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('dialog', (dialog) => {
        problems.push(`dialog: ${dialog.message()}`);
        void dialog.dismiss();
      });
      return { context, page };
    },
    async signIn(page, apiKey = h.org.apiKey) {
      // Sign-in attempts are limited per address and second of the manual clock.
      h.clock.advance(1000);
      await page.goto('/dashboard/login');
      // The key form is folded away under the e-mail form (key sign-in is for recovery).
      await page.getByText('Sign in with an API key', { exact: true }).click();
      await page.getByLabel('API key').fill(apiKey);
      await page.getByRole('button', { name: 'Sign in with the key' }).click();
      await page.waitForURL((url) => url.pathname === '/dashboard');
    },
    async signInAs(page, email, password) {
      await page.goto('/dashboard/login');
      await page.getByLabel('E-mail').fill(email);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.waitForURL((url) => url.pathname === '/dashboard');
    },
    async close() {
      for (const c of contexts) await c.close().catch(() => undefined);
      await browser.close();
      await h.close();
    },
  };
}

/** The visible text of each cell of a table's body rows. */
export async function tableRows(page: Page, selector: string): Promise<string[][]> {
  return page
    .locator(`${selector} tbody tr`)
    .evaluateAll((rows) =>
      rows.map((row) =>
        Array.from(row.querySelectorAll('td')).map((td) =>
          (td.textContent ?? '').replace(/\s+/g, ' ').trim(),
        ),
      ),
    );
}
