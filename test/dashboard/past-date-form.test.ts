import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../../src/accounts/roles.js';
import { person, personSession } from '../accounts/support.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { page } from './support.js';

// "Change from a past date" opens the restatement preview, which refuses an analyst: like every
// other change form, the Task types and Settings pages leave it out for them, heading and all.

/** Each page, and the heading of the history its form sits under (analysts keep the history). */
const PAGES = [
  ['/dashboard/settings', '<h2>Assumption history</h2>'],
  ['/dashboard/task-types/dev_bug_fix', '<h2>History</h2>'],
] as const;
const FORM = 'action="/dashboard/restatements/preview"';

describe.each(ENGINES)('the "Change from a past date" form by role (%s)', (engine) => {
  let h: Harness;
  const cookies = new Map<Role, string>();

  beforeAll(async () => {
    h = await createHarness(engine, { plan: 'pro' });
    for (const role of ['owner', 'admin', 'analyst'] as const) {
      await person(h, `${role}@example.com`, role);
      cookies.set(role, await personSession(h, `${role}@example.com`));
    }
  });
  afterAll(async () => h.close());

  for (const [url, history] of PAGES) {
    it(`shows it to an owner and an admin on ${url}`, async () => {
      for (const role of ['owner', 'admin'] as const) {
        const res = await page(h, cookies.get(role) ?? '', url);
        expect(res.statusCode).toBe(200);
        expect(res.body, role).toContain(FORM);
        expect(res.body, role).toContain('>Change from a past date</h3>');
        expect(res.body, role).toContain('Preview the change');
      }
    });

    it(`leaves it out for an analyst on ${url}, keeping the history`, async () => {
      const res = await page(h, cookies.get('analyst') ?? '', url);
      expect(res.statusCode).toBe(200);
      expect(res.body).not.toContain(FORM);
      expect(res.body).not.toContain('Change from a past date');
      expect(res.body).not.toContain('Preview the change');
      expect(res.body).toContain(history);
    });
  }
});
