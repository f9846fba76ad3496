import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { person, personSession } from '../accounts/support.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { page } from './support.js';

// An analyst reads the organisation's settings (the form to change them is left out for them),
// and gets no heading of a form they do not see.

describe.each(ENGINES)('the Settings page for an analyst (%s)', (engine) => {
  let h: Harness;
  let analyst: string;
  let admin: string;

  beforeAll(async () => {
    h = await createHarness(engine);
    const res = await h.request({
      method: 'PATCH',
      url: '/v1/settings',
      payload: { category_hourly_rates: { support: 42 }, fallback_baseline_minutes: 12 },
    });
    expect(res.statusCode, res.body).toBe(200);
    await person(h, 'anna@example.com', 'analyst');
    await person(h, 'adam@example.com', 'admin');
    analyst = await personSession(h, 'anna@example.com');
    admin = await personSession(h, 'adam@example.com');
  });
  afterAll(async () => h.close());

  const facts = (body: string) => {
    const table = /<table class="fields" id="settings-facts">([\s\S]*?)<\/table>/.exec(body)?.[1];
    if (table === undefined) return null;
    return [...table.matchAll(/<th scope="row">([\s\S]*?)<\/th>\s*<td>([\s\S]*?)<\/td>/g)].map((m) => [
      (m[1] ?? '').trim(),
      (m[2] ?? '')
        .replace(/<[^>]*>/g, '')
        .replace(/\s+/g, ' ')
        .trim(),
    ]);
  };

  it('shows an analyst the settings as text, without the forms or their headings', async () => {
    const res = await page(h, analyst, '/dashboard/settings');
    expect(res.statusCode).toBe(200);
    expect(facts(res.body)).toEqual([
      ['Name', 'Acme'],
      ['Currency', 'EUR'],
      ['Default hourly rate', '€50.00 / h'],
      ['Hourly rate per category', 'support €42.00'],
      ['Outcome credit', 'success 1, needs review 0.5, failure 0'],
      ['Fallback baseline', '12 minutes'],
      ['USD to EUR rate', 'The shipped reference rates'],
      ['Admin e-mails', 'None'],
    ]);
    expect(res.body).not.toContain('action="/dashboard/settings"');
    expect(res.body).not.toContain('Create a key');
  });

  it('shows an admin the form instead', async () => {
    const res = await page(h, admin, '/dashboard/settings');
    expect(facts(res.body)).toBeNull();
    expect(res.body).toContain('action="/dashboard/settings"');
    expect(res.body).toContain('>Create a key</h3>');
  });
});
