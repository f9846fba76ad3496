import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { person, personSession } from './support.js';

// An analyst cannot change who gets the alert e-mails, and reads it as text instead
// (Budgets → E-mails); an admin has the form.
describe.each(ENGINES)('who gets alert e-mails, as an analyst reads it (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
    await person(h, 'vic@example.com', 'analyst');
  });
  afterAll(async () => h.close());

  const emailsPage = async () => {
    const res = await h.app.inject({
      method: 'GET',
      url: '/dashboard/budgets/emails',
      headers: { cookie: await personSession(h, 'vic@example.com') },
    });
    expect(res.statusCode).toBe(200);
    const panel = /<section class="panel" id="alert-facts">([\s\S]*?)<\/section>/.exec(res.body);
    return (panel?.[1] ?? '')
      .replace(/<[^>]+>/g, ' ')
      .replace(/\s+/g, ' ')
      .trim();
  };

  it('names the admins who opted in, and says so when nobody did', async () => {
    expect(await emailsPage()).toBe(
      'Who gets alert e-mails Nobody: no admin has chosen to get budget and usage alerts by e-mail.',
    );
    const res = await h.request({
      method: 'PATCH',
      url: '/v1/settings',
      payload: {
        admin_emails: ['ops@acme.test', 'cfo@acme.test', 'it@acme.test'],
        alert_emails: ['cfo@acme.test', 'ops@acme.test'],
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    // In the order of the admin e-mails.
    expect(await emailsPage()).toBe(
      'Who gets alert e-mails Budget and usage alerts go by e-mail to ops@acme.test, cfo@acme.test.',
    );
  });
});
