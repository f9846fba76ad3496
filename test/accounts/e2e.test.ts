/// <reference lib="dom" />
// Code passed to page.evaluate runs in the browser.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { addMembership } from '../../src/accounts/store.js';
import { issueFirstOwnerLink } from '../../src/accounts/tokens.js';
import { startE2E, type E2E } from '../dashboard/e2e/browser.js';
import { seedEvents } from '../dashboard/e2e/seed.js';
import { PASSWORD, person } from './support.js';

// Signing in and out, an analyst who sees every figure but no control that changes anything,
// and switching organisations, in Chromium. `TALLY_SCREENSHOTS=/tmp/shots` keeps the pictures of
// the sign-in, account (sessions) and first-owner pages, to look at them.
const KEEP = process.env.TALLY_SCREENSHOTS;
const DIR = KEEP ?? mkdtempSync(join(tmpdir(), 'tally-people-shots-'));

/** Every page an analyst can open from the navigation, and the pages behind the tabs. */
const PAGES = [
  '/dashboard',
  '/dashboard/reports',
  '/dashboard/budgets',
  '/dashboard/budgets/payback',
  '/dashboard/budgets/emails',
  '/dashboard/events',
  '/dashboard/task-types',
  '/dashboard/task-types/support_ticket_reply',
  '/dashboard/webhooks',
  '/dashboard/usage',
  '/dashboard/settings',
  '/dashboard/opentelemetry',
];

/** The text of the page's main content, the figures included, without its controls. */
async function mainText(page: Page, without = 'form'): Promise<string> {
  return page.evaluate((extra) => {
    const main = document.querySelector('main')?.cloneNode(true) as HTMLElement | undefined;
    if (!main) return '';
    for (const el of Array.from(main.querySelectorAll(`form, script, input[type=hidden], ${extra}`)))
      el.remove();
    return (main.textContent ?? '').replace(/\s+/g, ' ').trim();
  }, without);
}

/** Controls in the main content that would change something: forms that post, their buttons. */
async function changeControls(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    Array.from(document.querySelectorAll('main form'))
      .filter((f) => (f.getAttribute('method') ?? 'get').toLowerCase() === 'post')
      .map((f) => f.getAttribute('action') ?? '?'),
  );
}

describe('people in Chromium', { timeout: 120_000 }, () => {
  let e: E2E;

  beforeAll(async () => {
    e = await startE2E({ plan: 'enterprise' });
    await seedEvents(e.h);
    await person(e.h, 'ana@example.com', 'admin');
    await person(e.h, 'vic@example.com', 'analyst');
    mkdirSync(DIR, { recursive: true });
  });
  afterAll(async () => {
    await e?.close();
    if (!KEEP) rmSync(DIR, { recursive: true, force: true });
  });

  it('signs in with e-mail and password, refuses a wrong one, and signs out', async () => {
    const { page } = await e.open();
    await page.goto('/dashboard/login');
    await page.screenshot({ path: join(DIR, 'sign-in.png'), fullPage: true });
    await page.getByLabel('E-mail').fill('ana@example.com');
    await page.getByLabel('Password').fill('not the password at all');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('is not right');
    // The refused sign-in answers 401, which Chromium logs as a failed resource; that is expected.
    e.problems.splice(0);
    await e.signInAs(page, 'ana@example.com', PASSWORD);
    expect(await page.title()).toBe('Overview · Tally');
    expect(await page.locator('.person-link').textContent()).toContain('ana@example.com');
    const cookie = (await page.context().cookies())[0];
    expect(cookie?.httpOnly).toBe(true);
    expect(cookie?.value.startsWith('p.')).toBe(true);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((url) => url.pathname === '/dashboard/login');
    expect(await page.getByRole('alert').textContent()).toContain('You are signed out');
    await page.goto('/dashboard/settings');
    expect(new URL(page.url()).pathname).toBe('/dashboard/login');
    expect(e.problems).toEqual([]);
  });

  it('shows an analyst every figure an admin sees, and no control that changes anything', async () => {
    const admin = (await e.open()).page;
    const analyst = (await e.open()).page;
    await e.signInAs(admin, 'ana@example.com', PASSWORD);
    await e.signInAs(analyst, 'vic@example.com', PASSWORD);
    for (const path of PAGES) {
      await admin.goto(path);
      await analyst.goto(path);
      expect(await analyst.title(), path).toBe(await admin.title());
      expect(await changeControls(analyst), path).toEqual([]);
      // Same figures: the analyst's page is the admin's without its forms and change panels (and
      // with the settings, the FTE hours and who gets alert e-mails as text in place of their forms). The links to each
      // task type are named for what the role does there (Manage, View).
      const typeLinks = 'table.catalogue a[href^="/dashboard/task-types/"]';
      expect(await mainText(analyst, `#settings-facts, #fte-facts, #alert-facts, ${typeLinks}`), path).toBe(
        await mainText(admin, `[data-change], ${typeLinks}`),
      );
    }
    await analyst.goto('/dashboard/settings');
    expect(await analyst.locator('#settings-facts').textContent()).toMatch(
      /Default hourly rate\s*€50\.00 \/ h/,
    );
    // The admin does have the controls.
    await admin.goto('/dashboard/settings');
    expect(await changeControls(admin)).toContain('/dashboard/settings/keys');
    // A hand-made post is refused by the verb all the same.
    await analyst.goto('/dashboard/account');
    const csrf = await analyst.locator('input[name=csrf_token]').first().inputValue();
    const status = await analyst.evaluate(async (token) => {
      const res = await fetch('/dashboard/webhooks/wh_x/test', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `csrf_token=${encodeURIComponent(token)}`,
      });
      return { status: res.status, text: await res.text() };
    }, csrf);
    expect(status.status).toBe(403);
    expect(status.text).toContain('may not do this');
    e.problems.splice(0);
  });

  it('switches between the person’s organisations from the header', async () => {
    const other = await e.h.createOrg({ plan: 'pro' });
    await e.h.ctx.db
      .updateTable('organizations')
      .set({ name: 'Globex' })
      .where('id', '=', other.id)
      .execute();
    const vic = await e.h.ctx.db
      .selectFrom('accounts')
      .select('id')
      .where('email', '=', 'vic@example.com')
      .executeTakeFirstOrThrow();
    await addMembership({ ctx: e.h.ctx, orgId: other.id, accountId: vic.id, role: 'admin' });
    const { page } = await e.open();
    await e.signInAs(page, 'vic@example.com', PASSWORD);
    expect(await page.locator('.org-name').textContent()).toBe('Acme');
    await page.getByLabel('Switch organisation').selectOption(other.id);
    await page.getByRole('button', { name: 'Switch' }).click();
    await page.waitForURL((url) => url.pathname === '/dashboard');
    expect(await page.locator('.org-name').textContent()).toBe('Globex');
    expect(await page.getByRole('status').textContent()).toContain('You are now looking at Globex');
    expect(await page.locator('.person-link .pill').textContent()).toBe('admin');
    // There vic is an admin: the controls are back.
    await page.goto('/dashboard/settings');
    expect(await changeControls(page)).toContain('/dashboard/settings/keys');

    await page.goto('/dashboard/account');
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.screenshot({ path: join(DIR, 'account-sessions.png'), fullPage: true });
    expect(await page.locator('main table').first().locator('tbody tr').count()).toBeGreaterThan(0);
    // On a phone the header with the switcher fits without sideways scrolling of the page.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto('/dashboard');
    await page.screenshot({ path: join(DIR, 'header-phone.png') });
    expect(
      await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth),
    ).toBe(true);
    expect(e.problems).toEqual([]);
  });

  it('shows the Periods, Members and single sign-on pages to an analyst without controls, to an owner with them', async () => {
    await person(e.h, 'olga@example.com', 'owner');
    const closed = await e.h.request({
      method: 'POST',
      url: '/v1/periods/2026-10/close',
      payload: { reason: 'October books' },
    });
    expect(closed.statusCode, closed.body).toBe(201);
    const invited = await e.h.request({
      method: 'POST',
      url: '/v1/invitations',
      payload: { email: 'new.person@example.com', role: 'analyst' },
    });
    expect(invited.statusCode, invited.body).toBe(201);
    const owner = (await e.open()).page;
    const analyst = (await e.open()).page;
    // Sign-ins from one address are limited per second of the manual clock.
    e.h.clock.advance(1000);
    await e.signInAs(owner, 'olga@example.com', PASSWORD);
    await e.signInAs(analyst, 'vic@example.com', PASSWORD);
    const pages: Array<[string, string, string[]]> = [
      ['members', '/dashboard/members', ['/dashboard/members/invite']],
      ['periods', '/dashboard/periods', []],
      ['period', '/dashboard/periods/2026-10', ['/dashboard/periods/2026-10/reopen']],
      ['single-sign-on', '/dashboard/settings/sso', ['/dashboard/settings/sso']],
      ['account', '/dashboard/account', []],
    ];
    for (const [name, path, ownerForms] of pages) {
      await owner.goto(path);
      await analyst.goto(path);
      for (const form of ownerForms) expect(await changeControls(owner), `owner ${path}`).toContain(form);
      expect(
        (await changeControls(analyst)).filter((a) => !a.startsWith('/dashboard/account')),
        `analyst ${path}`,
      ).toEqual([]);
      await owner.screenshot({ path: join(DIR, `${name}-owner.png`), fullPage: true });
      await analyst.screenshot({ path: join(DIR, `${name}-analyst.png`), fullPage: true });
    }
    expect(await mainText(analyst)).not.toContain('Redirect URI');
    await analyst.goto('/dashboard/settings/sso');
    expect(await mainText(analyst)).toContain('Single sign-on is set up by the organisation’s owners.');
    expect(e.problems).toEqual([]);
  });

  it('creates the first owner through the one-time link', async () => {
    const org = await e.h.createOrg();
    const link = await issueFirstOwnerLink(e.h.ctx, org.id);
    const { page } = await e.open();
    await page.goto(new URL(link).pathname);
    await page.screenshot({ path: join(DIR, 'first-owner.png'), fullPage: true });
    await page.getByLabel('E-mail').fill('founder@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create the account' }).click();
    await page.waitForURL((url) => url.pathname === '/dashboard');
    expect(await page.locator('.person-link').textContent()).toContain('founder@example.com');
    expect(await page.locator('.person-link .pill').textContent()).toBe('owner');
    expect(e.problems).toEqual([]);
  });
});
