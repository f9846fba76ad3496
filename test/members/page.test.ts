import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAccountSession } from '../../src/accounts/sessions.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';
import { csrfOf, page, post } from '../dashboard/support.js';
import { addPerson } from './people.js';

const NOW = '2026-11-20T12:00:00.000Z';

describe.each(ENGINES)('the Members page (%s)', (engine) => {
  let h: Harness;
  let org: TestOrg;
  const ids: Record<'owner' | 'admin' | 'analyst', string> = { owner: '', admin: '', analyst: '' };
  beforeAll(async () => {
    h = await createHarness(engine, { now: NOW, rateLimiter: unlimited });
    org = await h.createOrg();
    ids.owner = await addPerson(h, org, 'olga@acme.test', 'owner', 'Olga');
    ids.admin = await addPerson(h, org, 'adam@acme.test', 'admin', 'Adam');
    ids.analyst = await addPerson(h, org, 'ana@acme.test', 'analyst', '<b>Ana</b>');
  });
  afterAll(async () => h.close());

  const cookieOf = async (accountId: string) => {
    const opened = await openAccountSession({ ctx: h.ctx, accountId, orgId: org.id, method: 'password' });
    return `tally_session=${opened.token}`;
  };
  const act = async (cookie: string, url: string, fields: Record<string, string> = {}) => {
    const shown = await page(h, cookie, '/dashboard/members');
    const res = await post(h, cookie, url, { csrf_token: csrfOf(shown.body), ...fields });
    expect(res.statusCode, res.body).toBe(303);
    return (await page(h, cookie, '/dashboard/members')).body;
  };

  it('is in the navigation for every role; an analyst sees the members and no control', async () => {
    const cookie = await cookieOf(ids.analyst);
    const res = await page(h, cookie, '/dashboard/members');
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<a href="/dashboard/members"  aria-current="page">Members</a>');
    expect(res.body).toContain('<title>Members · Tally</title>');
    for (const email of ['olga@acme.test', 'adam@acme.test', 'ana@acme.test'])
      expect(res.body).toContain(email);
    expect(res.body).toContain('&lt;b&gt;Ana&lt;/b&gt;');
    expect(res.body).not.toContain('<b>Ana</b>');
    expect(res.body).not.toContain('Send invitation');
    expect(res.body).not.toContain('Change role');
    expect(res.body).not.toContain('Remove…');
    // The verbs refuse what the page hides.
    const forced = await post(h, cookie, '/dashboard/members/invite', {
      csrf_token: csrfOf(res.body),
      email: 'x@example.com',
      role: 'analyst',
    });
    expect(forced.statusCode).toBe(303);
    expect((await page(h, cookie, '/dashboard/members')).body).toContain(
      'Not invited: Your role (analyst) may not do this; it needs the admin role.',
    );
  });

  it('an admin invites (not owners) and manages the non-owners; the audit names the person', async () => {
    const cookie = await cookieOf(ids.admin);
    const shown = (await page(h, cookie, '/dashboard/members')).body;
    expect(shown).toContain('Send invitation');
    expect(shown).not.toContain('<option value="owner"');
    expect(shown).toContain('Only an owner can change an owner');
    const after = await act(cookie, '/dashboard/members/invite', {
      email: 'Neo@Example.com',
      role: 'analyst',
    });
    expect(after).toContain('Invitation sent to neo@example.com (analyst).');
    expect(after).toContain('neo@example.com');
    const owned = await act(cookie, '/dashboard/members/invite', {
      email: 'boss@example.com',
      role: 'owner',
    });
    expect(owned).toContain('Not invited: Your role (admin) may not do this; it needs the owner role.');
    const audit = await h.ctx.db
      .selectFrom('audit_log')
      .selectAll()
      .where('org_id', '=', org.id)
      .where('action', '=', 'invitation.created')
      .executeTakeFirstOrThrow();
    expect(audit).toMatchObject({ actor_account_id: ids.admin, actor_key_id: null });

    const invitation = await h.ctx.db
      .selectFrom('invitations')
      .select('id')
      .where('email', '=', 'neo@example.com')
      .executeTakeFirstOrThrow();
    expect(await act(cookie, `/dashboard/members/invitations/${invitation.id}/resend`)).toContain(
      'Invitation sent again to neo@example.com; the previous link no longer works.',
    );
    const revoked = await act(cookie, `/dashboard/members/invitations/${invitation.id}/revoke`);
    expect(revoked).toContain('Invitation of neo@example.com revoked.');
    expect(revoked).toContain('No pending invitations.');
    expect(await act(cookie, `/dashboard/members/${ids.analyst}/role`, { role: 'admin' })).toContain(
      'ana@acme.test is now admin.',
    );
    expect(await act(cookie, `/dashboard/members/${ids.analyst}/role`, { role: 'analyst' })).toContain(
      'ana@acme.test is now analyst.',
    );
    expect(await act(cookie, `/dashboard/members/${ids.owner}/role`, { role: 'analyst' })).toContain(
      'Role not changed:',
    );
  });

  it('the last owner cannot leave or be demoted; with a second owner it can', async () => {
    const cookie = await cookieOf(ids.owner);
    const shown = (await page(h, cookie, '/dashboard/members')).body;
    expect(shown).toContain('<option value="owner"');
    expect(await act(cookie, `/dashboard/members/${ids.owner}/role`, { role: 'admin' })).toContain(
      'Role not changed: An organisation keeps at least one owner',
    );
    expect(await act(cookie, `/dashboard/members/${ids.owner}/remove`)).toContain(
      'Not removed: An organisation keeps at least one owner',
    );
    expect(await act(cookie, `/dashboard/members/${ids.admin}/role`, { role: 'owner' })).toContain(
      'adam@acme.test is now owner.',
    );
    expect(await act(cookie, `/dashboard/members/${ids.owner}/role`, { role: 'admin' })).toContain(
      'olga@acme.test is now admin.',
    );
    // Olga's own session now acts as admin: she may no longer touch the owner.
    expect((await page(h, cookie, '/dashboard/members')).body).toContain('Only an owner can change an owner');
  });

  it('removing a member ends their live session at its next request', async () => {
    const victim = await cookieOf(ids.analyst);
    expect((await page(h, victim, '/dashboard/members')).statusCode).toBe(200);
    const owner = await cookieOf(ids.admin);
    const confirm = await page(h, owner, `/dashboard/members/${ids.analyst}/remove`);
    expect(confirm.statusCode).toBe(200);
    expect(confirm.body).toContain('Remove ana@acme.test from Acme?');
    expect(await act(owner, `/dashboard/members/${ids.analyst}/remove`)).toContain('ana@acme.test removed.');
    const next = await page(h, victim, '/dashboard/members');
    expect(next.statusCode).toBe(303);
    // Its row went with the membership, so the next request finds no session at all.
    expect(next.headers.location).toBe('/dashboard/login');
    expect(next.headers['set-cookie']).toBeUndefined();
    const audit = await h.ctx.db
      .selectFrom('audit_log')
      .selectAll()
      .where('org_id', '=', org.id)
      .where('action', '=', 'member.removed')
      .executeTakeFirstOrThrow();
    expect(audit).toMatchObject({ target: `account:${ids.analyst}`, actor_account_id: ids.admin });
  });
});
