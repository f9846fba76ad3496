import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { csrfOf, ORIGIN, page, post, session } from './support.js';

const XSS = '<img src=x onerror=alert(1)>';

describe.each(ENGINES)('dashboard forms and escaping (%s)', (engine) => {
  let h: Harness;
  let cookie: string;
  let token: string;
  beforeAll(async () => {
    h = await createHarness(engine);
    cookie = await session(h);
    token = csrfOf((await page(h, cookie, '/dashboard/settings')).body);
  });
  afterAll(async () => h.close());

  const nameOf = async () =>
    (await h.request({ method: 'GET', url: '/v1/settings' })).json<{ name: string }>().name;
  const settingsForm = (name: string, csrf: string) => ({
    csrf_token: csrf,
    name,
    default_hourly_rate: '50',
    credit_success: '1',
    credit_needs_review: '0.5',
    credit_failure: '0',
  });

  it('accepts a form with the session token from this origin', async () => {
    const res = await post(h, cookie, '/dashboard/settings', settingsForm('Acme Ops', token));
    expect(res.statusCode).toBe(303);
    expect(await nameOf()).toBe('Acme Ops');
    const next = await page(h, cookie, '/dashboard/settings');
    expect(next.body).toContain('Settings saved.');
  });

  it('refuses a form without the CSRF token', async () => {
    const { csrf_token: _drop, ...fields } = settingsForm('No token', token);
    const res = await post(h, cookie, '/dashboard/settings', fields);
    expect(res.statusCode).toBe(403);
    expect(await nameOf()).toBe('Acme Ops');
  });

  it('refuses a form with a wrong CSRF token', async () => {
    const res = await post(
      h,
      cookie,
      '/dashboard/settings',
      settingsForm('Wrong token', `${token.slice(1)}x`),
    );
    expect(res.statusCode).toBe(403);
    expect(await nameOf()).toBe('Acme Ops');
  });

  it("refuses another session's token", async () => {
    const other = await session(h);
    const otherToken = csrfOf((await page(h, other, '/dashboard/settings')).body);
    expect(otherToken).not.toBe(token);
    const res = await post(h, cookie, '/dashboard/settings', settingsForm('Other token', otherToken));
    expect(res.statusCode).toBe(403);
  });

  it('refuses a form from another origin, or naming none, even with the right token', async () => {
    const evil = await post(h, cookie, '/dashboard/settings', settingsForm('Evil', token), {
      origin: 'https://evil.example',
    });
    expect(evil.statusCode).toBe(403);
    const referer = await post(h, cookie, '/dashboard/settings', settingsForm('Evil', token), {
      referer: 'https://evil.example/page',
    });
    expect(referer.statusCode).toBe(403);
    const none = await post(h, cookie, '/dashboard/settings', settingsForm('Evil', token), {});
    expect(none.statusCode).toBe(403);
    const sameReferer = await post(h, cookie, '/dashboard/settings', settingsForm('Via referer', token), {
      referer: `${ORIGIN}/dashboard/settings`,
    });
    expect(sameReferer.statusCode).toBe(303);
    expect(await nameOf()).toBe('Via referer');
  });

  it('refuses sign-out without the token (it is a state change too)', async () => {
    const res = await post(h, cookie, '/dashboard/logout', {});
    expect(res.statusCode).toBe(403);
    expect((await page(h, cookie, '/dashboard')).statusCode).toBe(200);
  });

  it('does not accept state changes by GET', async () => {
    const res = await page(h, cookie, '/dashboard/logout');
    expect(res.statusCode).toBe(404);
    expect((await page(h, cookie, '/dashboard')).statusCode).toBe(200);
  });

  it('shows attacker-controlled values as text on every page that shows them', async () => {
    const tracked = await h.request({
      method: 'POST',
      url: '/v1/track',
      payload: {
        agent_id: XSS,
        task_type: 'support_ticket_reply',
        outcome: 'success',
        metadata: { client_id: `"><script>alert(2)</script>`, note: XSS },
      },
    });
    expect(tracked.statusCode).toBe(201);
    const id = tracked.json<{ event_id: string }>().event_id;
    await post(h, cookie, '/dashboard/settings', settingsForm(`Org ${XSS}`, token));
    for (const url of [
      '/dashboard',
      '/dashboard/reports?group_by=agent&group_by=client',
      '/dashboard/events',
      `/dashboard/events/${id}`,
      `/dashboard/events?agent_id=${encodeURIComponent(XSS)}`,
      '/dashboard/settings',
    ]) {
      const res = await page(h, cookie, url);
      expect(res.statusCode, url).toBe(200);
      expect(res.body, url).not.toContain('<img src=x');
      expect(res.body, url).not.toContain('<script>alert');
      expect(res.body, url).toContain('&lt;img src=x onerror=alert(1)&gt;');
    }
  });

  it('answers an ingest key on the API with insufficient_scope, and admin pages stay admin-only', async () => {
    const created = await post(h, cookie, '/dashboard/settings/keys', {
      csrf_token: token,
      name: 'agent',
      scope: 'ingest',
    });
    expect(created.statusCode).toBe(201);
    const key = /tally_live_[A-Za-z0-9]{8}_[A-Za-z0-9]{48}/.exec(created.body)?.[0] ?? '';
    expect(key).not.toBe('');
    const res = await h.request({ method: 'GET', url: '/v1/reports/usage', apiKey: key });
    expect(res.statusCode).toBe(403);
    expect(res.json<{ error: { code: string } }>().error.code).toBe('insufficient_scope');
    // The key is shown once: the settings page lists it without its secret.
    const settings = await page(h, cookie, '/dashboard/settings');
    expect(settings.body).not.toContain(key);
    expect(settings.body).toContain(key.slice(11, 19));
  });
});
