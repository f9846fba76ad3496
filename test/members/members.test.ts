import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { expectError } from '../support/errors.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';
import { addPerson } from './people.js';

const NOW = '2026-11-20T12:00:00.000Z';

describe.each(ENGINES)('/v1/members (%s)', (engine) => {
  let h: Harness;
  let org: TestOrg;
  let owner: string;
  let admin: string;
  let analyst: string;
  beforeAll(async () => {
    h = await createHarness(engine, { now: NOW, rateLimiter: unlimited });
    org = await h.createOrg();
    owner = await addPerson(h, org, 'olga@acme.test', 'owner', 'Olga');
    h.clock.advance(1000);
    admin = await addPerson(h, org, 'adam@acme.test', 'admin', 'Adam');
    h.clock.advance(1000);
    analyst = await addPerson(h, org, 'ana@acme.test', 'analyst');
  });
  afterAll(async () => h.close());

  const call = (
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    payload?: object,
    key = org.apiKey,
  ) => h.request({ method, url, apiKey: key, ...(payload ? { payload } : {}) });

  async function openSession(accountId: string, orgId: string, lastSeen: number) {
    const id = `sess-${accountId}-${orgId}-${lastSeen}`;
    await h.ctx.db
      .insertInto('account_sessions')
      .values({
        id,
        account_id: accountId,
        org_id: orgId,
        csrf_token: 'x',
        flash: null,
        method: 'password',
        user_agent: null,
        ip: null,
        created_at: lastSeen,
        last_seen_at: lastSeen,
      })
      .execute();
    return id;
  }

  it('lists members with e-mail, name, role, since and last seen, newest account first, in pages', async () => {
    const seen = Date.parse(NOW) + 60_000;
    await openSession(admin, org.id, seen - 30_000);
    await openSession(admin, org.id, seen);
    const other = await h.createOrg();
    await addPerson(h, other, 'adam@acme.test', 'owner');
    await openSession(admin, other.id, seen + 99_000);

    const res = await call('GET', '/v1/members');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      data: [
        {
          account_id: analyst,
          email: 'ana@acme.test',
          name: null,
          role: 'analyst',
          since: '2026-11-20T12:00:02.000Z',
          last_seen_at: null,
        },
        {
          account_id: admin,
          email: 'adam@acme.test',
          name: 'Adam',
          role: 'admin',
          since: '2026-11-20T12:00:01.000Z',
          last_seen_at: new Date(seen).toISOString(),
        },
        {
          account_id: owner,
          email: 'olga@acme.test',
          name: 'Olga',
          role: 'owner',
          since: NOW,
          last_seen_at: null,
        },
      ],
      next_cursor: null,
    });
    const first = (await call('GET', '/v1/members?limit=2')).json();
    expect(first.data).toHaveLength(2);
    expect(first.next_cursor).toBe(admin);
    const second = (await call('GET', `/v1/members?limit=2&cursor=${first.next_cursor}`)).json();
    expect(second).toEqual({ data: [expect.objectContaining({ account_id: owner })], next_cursor: null });
    expect((await call('GET', `/v1/members/${owner}`)).json().email).toBe('olga@acme.test');
    expectError(await call('GET', '/v1/members/acct_nope'), 404, 'not_found');
    // The other organisation lists only its own.
    const theirs = (await call('GET', '/v1/members', undefined, other.apiKey)).json().data;
    expect(theirs.map((m: { email: string }) => m.email)).toEqual(['adam@acme.test']);
  });

  it('changes a role (audited); an admin key may not make or unmake owners', async () => {
    const res = await call('PATCH', `/v1/members/${analyst}`, { role: 'admin' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ account_id: analyst, role: 'admin' });
    const audit = (await call('GET', '/v1/audit-log?limit=1')).json().data[0];
    expect(audit).toMatchObject({
      action: 'member.role_changed',
      target: `account:${analyst}`,
      actor_key_id: org.keyId,
      before: { email: 'ana@acme.test', role: 'analyst' },
      after: { email: 'ana@acme.test', role: 'admin' },
    });
    expect((await call('PATCH', `/v1/members/${analyst}`, { role: 'analyst' })).json().role).toBe('analyst');
    expectError(await call('PATCH', `/v1/members/${analyst}`, { role: 'owner' }), 403, 'insufficient_role');
    expectError(await call('PATCH', `/v1/members/${owner}`, { role: 'admin' }), 403, 'insufficient_role');
    expectError(await call('DELETE', `/v1/members/${owner}`), 403, 'insufficient_role');
    expectError(await call('PATCH', `/v1/members/${analyst}`, { role: 'boss' }), 422, 'validation_error');
    expectError(await call('PATCH', `/v1/members/${analyst}`, {}), 422, 'validation_error');
    expectError(await call('PATCH', '/v1/members/acct_nope', { role: 'admin' }), 404, 'not_found');
  });

  it('removes a member with their sessions in this organisation only (audited)', async () => {
    const temp = await addPerson(h, org, 'temp@acme.test', 'analyst');
    const other = await h.createOrg();
    await addPerson(h, other, 'temp@acme.test', 'analyst');
    const here = await openSession(temp, org.id, Date.parse(NOW));
    const there = await openSession(temp, other.id, Date.parse(NOW));
    h.clock.advance(1000);
    const res = await call('DELETE', `/v1/members/${temp}`);
    expect(res.statusCode, res.body).toBe(204);
    const sessions = await h.ctx.db
      .selectFrom('account_sessions')
      .select('id')
      .where('account_id', '=', temp)
      .execute();
    expect(sessions.map((s) => s.id)).toEqual([there]);
    expect(sessions.map((s) => s.id)).not.toContain(here);
    expectError(await call('GET', `/v1/members/${temp}`), 404, 'not_found');
    expect((await call('GET', '/v1/members', undefined, other.apiKey)).json().data).toHaveLength(1);
    expect((await call('GET', '/v1/audit-log?limit=1')).json().data[0]).toMatchObject({
      action: 'member.removed',
      target: `account:${temp}`,
      before: { email: 'temp@acme.test', role: 'analyst' },
    });
    expectError(await call('DELETE', `/v1/members/${temp}`), 404, 'not_found');
  });
});
