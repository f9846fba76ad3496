/// <reference lib="dom" />
// Code passed to page.evaluate runs in the browser.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAccountSession } from '../../src/accounts/sessions.js';
import { createMailTransport } from '../../src/email/sender.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { startE2E, type E2E } from '../dashboard/e2e/browser.js';
import { unlimited } from '../reports/unlimited.js';
import { startSmtp, type Mailbox } from '../webhooks/smtp.js';
import { addPerson } from './people.js';

// `TALLY_SCREENSHOTS=/tmp/shots npx vitest run test/members/browser.test.ts` keeps the pictures.
const KEEP = process.env.TALLY_SCREENSHOTS;
const DIR = KEEP ?? mkdtempSync(join(tmpdir(), 'tally-members-shots-'));
const PUBLIC = 'https://tally.example.com';
const PASSWORD = 'correct horse battery staple';

describe('accepting an invitation in Chromium', { timeout: 90_000 }, () => {
  let e: E2E;
  let smtp: Mailbox;
  let owner: string;
  beforeAll(async () => {
    smtp = await startSmtp();
    e = await startE2E({
      rateLimiter: unlimited,
      env: { TALLY_PUBLIC_URL: PUBLIC, TALLY_SMTP_URL: smtp.url },
    });
    owner = await addPerson(e.h, e.h.org, 'olga@acme.test', 'owner', 'Olga Owner', PASSWORD);
  });
  afterAll(async () => {
    await e?.close();
    await smtp?.close();
    if (!KEEP) rmSync(DIR, { recursive: true, force: true });
  });

  it('opens the link of the received e-mail, sets a password and lands signed in; Members shows no controls to an analyst', async () => {
    const res = await e.h.request({
      method: 'POST',
      url: '/v1/invitations',
      payload: { email: 'nia@example.com', role: 'analyst' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const worker = new DeliveryWorker(e.h.ctx, { mailTransport: createMailTransport(smtp.url) });
    await worker.runOnce();
    await worker.stop();
    expect(smtp.messages).toHaveLength(1);
    const mail = await simpleParser(smtp.messages[0]?.raw ?? '');
    const link = new RegExp(`href="(${PUBLIC}/dashboard/invitations/[A-Za-z0-9_-]+)"`).exec(
      String(mail.html),
    )?.[1];
    expect(link).toBeDefined();
    // The e-mail's link, on the server under test (TALLY_PUBLIC_URL names where people reach it).
    const url = String(link).replace(PUBLIC, e.origin);

    const { page } = await e.open();
    await page.goto(url);
    await expect(page.title()).resolves.toBe('Join an organisation · Tally');
    await expect(page.getByText('You are invited to join Acme')).toBeTruthy();
    await page.screenshot({ path: `${DIR}/invitation-1280.png`, fullPage: true });
    await page.getByLabel('Your name').fill('Nia Ng');
    await page.getByLabel('Choose a password').fill(PASSWORD);
    await page.getByLabel('Repeat the password').fill('not the same password');
    await page.getByRole('button', { name: 'Create account and join' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('The two passwords differ');
    await page.screenshot({ path: `${DIR}/invitation-error-1280.png`, fullPage: true });
    await page.getByLabel('Choose a password').fill(PASSWORD);
    await page.getByLabel('Repeat the password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account and join' }).click();
    await page.waitForURL((u) => u.pathname === '/dashboard');
    await expect(page.getByRole('status').textContent()).resolves.toContain(
      'Welcome: you joined Acme as analyst.',
    );

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Members' }).click();
    await page.waitForURL((u) => u.pathname === '/dashboard/members');
    const text = await page.locator('main').innerText();
    expect(text).toContain('nia@example.com');
    // The name typed before the refused attempt was kept.
    expect(text).toContain('Nia Ng');
    expect(text).toContain('olga@acme.test');
    await expect(page.getByRole('button', { name: 'Send invitation' }).count()).resolves.toBe(0);
    await expect(page.getByRole('button', { name: /Change role/ }).count()).resolves.toBe(0);
    await page.screenshot({ path: `${DIR}/members-analyst-1280.png`, fullPage: true });

    // The link is used up: opened again, it says so.
    await page.goto(url);
    await expect(page.locator('main').innerText()).resolves.toContain(
      'This invitation has already been used.',
    );
    await page.screenshot({ path: `${DIR}/invitation-used-1280.png`, fullPage: true });
    expect(e.problems).toEqual([]);
  });

  it("an owner's Members page has the controls, at desktop and phone size", async () => {
    const opened = await openAccountSession({
      ctx: e.h.ctx,
      accountId: owner,
      orgId: e.h.org.id,
      method: 'password',
    });
    for (const [name, viewport] of [
      ['1280', { width: 1280, height: 800 }],
      ['390', { width: 390, height: 844 }],
    ] as const) {
      const { context, page } = await e.open(viewport);
      await context.addCookies([
        { name: 'tally_session', value: opened.token, url: `${e.origin}/dashboard` },
      ]);
      await page.goto('/dashboard/members');
      await page.getByLabel('E-mail').fill(`pat-${name}@example.com`);
      await page.getByLabel('Role', { exact: true }).selectOption('admin');
      await page.getByRole('button', { name: 'Send invitation' }).click();
      await page.waitForURL((u) => u.pathname === '/dashboard/members');
      await expect(page.getByRole('status').textContent()).resolves.toContain(
        `Invitation sent to pat-${name}@example.com (admin).`,
      );
      await expect(
        page.getByRole('button', { name: 'Change the role of nia@example.com' }).count(),
      ).resolves.toBe(1);
      await page.screenshot({ path: `${DIR}/members-owner-${name}.png`, fullPage: true });
    }
    expect(e.problems).toEqual([]);
  });
});
