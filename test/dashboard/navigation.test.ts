import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { person, personSession } from '../accounts/support.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { page, session } from './support.js';

// The header marks the page one is on: a navigation entry, or on "Your account" the person's own
// link; never an entry the page is not.

/** The labels of the navigation links marked as the current page. */
function currentNav(body: string): string[] {
  const nav = /<nav aria-label="Main">([\s\S]*?)<\/nav>/.exec(body)?.[1] ?? '';
  return [...nav.matchAll(/<a\b[^>]*aria-current="page"[^>]*>([^<]*)<\/a>/g)].map((m) => (m[1] ?? '').trim());
}

const accountLinkCurrent = (body: string) =>
  /<a\b[^>]*class="person-link"[^>]*aria-current="page"/.test(body);

describe.each(ENGINES)('the current page in the header (%s)', (engine) => {
  let h: Harness;
  let cookie: string;

  beforeAll(async () => {
    h = await createHarness(engine);
    await person(h, 'ada@example.com', 'admin');
    cookie = await personSession(h, 'ada@example.com');
  });
  afterAll(async () => h.close());

  it('marks the account link, and no navigation entry, on "Your account"', async () => {
    const res = await page(h, cookie, '/dashboard/account');
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<h1>Your account</h1>');
    expect(currentNav(res.body)).toEqual([]);
    expect(accountLinkCurrent(res.body)).toBe(true);
  });

  it('marks the navigation entry of a page in the navigation, and not the account link', async () => {
    for (const [url, label] of [
      ['/dashboard', 'Overview'],
      ['/dashboard/settings', 'Settings'],
      ['/dashboard/periods', 'Periods'],
    ] as const) {
      const res = await page(h, cookie, url);
      expect(currentNav(res.body), url).toEqual([label]);
      expect(accountLinkCurrent(res.body), url).toBe(false);
    }
  });

  it('marks nothing on a page that is not there', async () => {
    const res = await page(h, cookie, '/dashboard/no-such-page');
    expect(res.statusCode).toBe(404);
    expect(currentNav(res.body)).toEqual([]);
    expect(accountLinkCurrent(res.body)).toBe(false);
  });

  it("marks nothing on an API key's account page (it has no account link)", async () => {
    const res = await page(h, await session(h), '/dashboard/account');
    expect(res.statusCode).toBeLessThan(500);
    expect(currentNav(res.body)).toEqual([]);
  });
});
