/// <reference lib="dom" />
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { addMembership, createAccount } from '../../src/accounts/store.js';
import { forgetProviders } from '../../src/sso/oidc.js';
import { CHROMIUM } from '../dashboard/e2e/browser.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { freePort } from '../support/serve.js';
import { startProvider, type TestProvider } from './provider.js';

// The whole single sign-on in Chromium: the sign-in page, the e-mail that picks the organisation,
// the provider's own login form, and back in the dashboard, signed in. The provider's clock is
// this process's Date, held at NOW with the service's: a fixed instant after today, so that the
// browser keeps the provider's cookies (they carry expiry dates). `TALLY_SCREENSHOTS=/tmp/shots`
// keeps the pictures.
const NOW = '2031-03-10T09:00:00.000Z';
const PASSWORD = 'provider-password-1';
const DIR = process.env.TALLY_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'tally-sso-shots-'));

describe('single sign-on in Chromium against oidc-provider', { timeout: 90_000 }, () => {
  let h: Harness;
  let org: TestOrg;
  let provider: TestProvider;
  let browser: Browser;
  let origin: string;

  beforeAll(async () => {
    vi.useFakeTimers({ toFake: ['Date'], now: new Date(NOW) });
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    h = await createHarness('sqlite', { now: NOW, env: { TALLY_PUBLIC_URL: origin } });
    await h.app.listen({ host: '127.0.0.1', port });
    org = await h.createOrg({ plan: 'enterprise' });
    await h.storage.db
      .updateTable('organizations')
      .set({ name: 'Northwind' })
      .where('id', '=', org.id)
      .execute();
    provider = await startProvider({
      redirectUri: `${origin}/dashboard/sso/callback`,
      people: [
        { email: 'ana@northwind.example', name: 'Ana Lima', emailVerified: true, password: PASSWORD },
        { email: 'olga@northwind.example', name: 'Olga Berg', emailVerified: true, password: PASSWORD },
      ],
    });
    forgetProviders();
    const put = await h.request({
      method: 'PUT',
      url: '/v1/sso',
      apiKey: org.apiKey,
      payload: {
        issuer: provider.issuer,
        client_id: provider.clientId,
        client_secret: provider.clientSecret,
        allowed_domains: ['northwind.example'],
        default_role: 'analyst',
      },
    });
    expect(put.statusCode, put.body).toBe(200);
    const olga = await createAccount({ ctx: h.ctx, email: 'olga@northwind.example', name: 'Olga Berg' });
    await addMembership({ ctx: h.ctx, orgId: org.id, accountId: olga.id, role: 'owner' });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await provider?.close();
    await h?.close();
    vi.useRealTimers();
  });

  async function shot(page: Page, name: string) {
    const path = `${DIR}/sso-${name}.png`;
    await page.screenshot({ path, fullPage: true });
    expect(statSync(path).size).toBeGreaterThan(5_000);
  }

  async function signInThroughProvider(page: Page, email: string, pictures: boolean) {
    await page.goto(`${origin}/dashboard/login`);
    if (pictures) await shot(page, 'login');
    await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
    await page.getByLabel('Work e-mail').fill(email);
    if (pictures) await shot(page, 'entry');
    await page.getByRole('button', { name: 'Continue' }).click();
    // The provider's own page, on its own origin.
    await page.waitForURL(
      (url) => url.origin === provider.issuer && url.pathname.startsWith('/interaction/'),
    );
    await expect
      .poll(() => page.getByRole('heading', { level: 1 }).textContent())
      .toBe('Test identity provider');
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    if (pictures) await shot(page, 'provider');
    await page.getByRole('button', { name: 'Sign in at the provider' }).click();
    await page.waitForURL(`${origin}/dashboard`);
  }

  it('signs a new person in from the login page, through the provider’s form, into the dashboard', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    try {
      await signInThroughProvider(page, 'ana@northwind.example', true);
      await expect.poll(() => page.locator('.org-name').textContent()).toBe('Northwind');
      await shot(page, 'signed-in');
      const cookies = await context.cookies(`${origin}/dashboard/sso/callback`);
      expect(cookies.find((c) => c.name === 'tally_session')?.value).toMatch(/^p\./);
      expect(cookies.find((c) => c.name === 'tally_sso')).toBeUndefined();
      // A new analyst: the single sign-on settings are not theirs to see.
      await page.goto(`${origin}/dashboard/settings/sso`);
      await expect
        .poll(() => page.locator('main').textContent())
        .toContain('set up by the organisation’s owners');
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('an owner signed in through the provider edits the settings page', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    try {
      await signInThroughProvider(page, 'olga@northwind.example', false);
      await page.goto(`${origin}/dashboard/settings/sso`);
      await expect
        .poll(() => page.locator('#redirect-uri').textContent())
        .toBe(`${origin}/dashboard/sso/callback`);
      await expect.poll(() => page.getByLabel('Issuer URL').inputValue()).toBe(provider.issuer);
      expect(await page.getByLabel('Client secret').inputValue()).toBe('');
      expect(await page.content()).not.toContain(provider.clientSecret);
      await shot(page, 'settings');
      await page.getByLabel('Allowed e-mail domains').fill('northwind.example\nnorthwind-labs.example');
      await page.getByLabel('Members may still sign in with a password').uncheck();
      await page.getByRole('button', { name: 'Save single sign-on' }).click();
      await expect.poll(() => page.getByRole('status').textContent()).toContain('Single sign-on saved.');
      const got = await h.request({ method: 'GET', url: '/v1/sso', apiKey: org.apiKey });
      expect(got.json()).toMatchObject({
        allowed_domains: ['northwind-labs.example', 'northwind.example'],
        passwords_allowed: false,
        enabled: true,
      });
      // The secret kept (it was left empty), so sign-in still works.
      const row = await h.storage.db
        .selectFrom('sso_connections')
        .select('client_secret')
        .executeTakeFirstOrThrow();
      expect(row.client_secret.startsWith('tsb1.')).toBe(true);
      await shot(page, 'settings-saved');
      await page.setViewportSize({ width: 390, height: 844 });
      await page.goto(`${origin}/dashboard/settings/sso`);
      await shot(page, 'settings-phone');
      // Nothing reaches past the right edge of a phone's screen.
      const wide = await page.evaluate(() =>
        Array.from(document.querySelectorAll('main *'))
          .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
          .map((el) => el.tagName),
      );
      expect(wide).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
