import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMailTransport } from '../../src/email/sender.js';
import { tokenHash } from '../../src/members/invitations.js';
import { createApiKey } from '../../src/orgs/api-keys.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { ENGINES } from '../support/engines.js';
import { expectError } from '../support/errors.js';
import { createHarness, type Harness, type TestOrg } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';
import { startSmtp, type Mailbox } from '../webhooks/smtp.js';
import { addPerson } from './people.js';

const NOW = '2026-11-20T12:00:00.000Z';
const DAY = 86_400_000;
const LINK = /https:\/\/tally\.example\.com\/dashboard\/invitations\/([A-Za-z0-9_-]{43})/;

describe.each(ENGINES)('/v1/invitations over SMTP (%s)', (engine) => {
  let h: Harness;
  let smtp: Mailbox;
  let org: TestOrg;
  beforeAll(async () => {
    smtp = await startSmtp();
    h = await createHarness(engine, {
      now: NOW,
      rateLimiter: unlimited,
      env: { TALLY_PUBLIC_URL: 'https://tally.example.com', TALLY_SMTP_URL: smtp.url },
    });
    org = await h.createOrg();
    const renamed = await h.request({
      method: 'PATCH',
      url: '/v1/settings',
      apiKey: org.apiKey,
      payload: { name: 'Acme <Finance>' },
    });
    expect(renamed.statusCode, renamed.body).toBe(200);
    await addPerson(h, org, 'olga@acme.test', 'owner', 'Olga');
  });
  afterAll(async () => {
    await h.close();
    await smtp.close();
  });

  const call = (
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    payload?: object,
    key = org.apiKey,
  ) => h.request({ method, url, apiKey: key, ...(payload ? { payload } : {}) });

  /** Sends what the outbox holds over SMTP and returns the new messages, parsed. */
  async function deliver() {
    const before = smtp.messages.length;
    const worker = new DeliveryWorker(h.ctx, { mailTransport: createMailTransport(smtp.url) });
    await worker.runOnce();
    await worker.stop();
    return Promise.all(smtp.messages.slice(before).map((m) => simpleParser(m.raw)));
  }

  const tokenOf = (text: string | undefined) => {
    const token = LINK.exec(text ?? '')?.[1];
    expect(token, text).toBeDefined();
    return token as string;
  };

  it('invites an e-mail: the e-mail arrives over SMTP with a single link valid 7 days, only its hash stored', async () => {
    const res = await call('POST', '/v1/invitations', { email: '  Ann@Example.COM ', role: 'analyst' });
    expect(res.statusCode, res.body).toBe(201);
    const invitation = res.json();
    expect(invitation).toMatchObject({
      id: expect.stringMatching(/^inv_[0-9A-HJKMNP-TV-Z]{26}$/),
      email: 'ann@example.com',
      role: 'analyst',
      status: 'pending',
      invited_by_key_id: org.keyId,
      sent_count: 1,
      created_at: NOW,
      expires_at: new Date(Date.parse(NOW) + 7 * DAY).toISOString(),
      accepted_at: null,
      revoked_at: null,
    });
    expect(JSON.stringify(invitation)).not.toMatch(/token/);

    const [mail, ...others] = await deliver();
    expect(others).toHaveLength(0);
    expect(mail?.to && !Array.isArray(mail.to) && mail.to.text).toBe('ann@example.com');
    expect(mail?.subject).toBe('[Tally] You are invited to Acme <Finance>');
    expect(mail?.text).toContain('as an analyst (every report and page, reading only)');
    expect(mail?.text).toContain('The link works once and until 27 November 2026, 12:00 UTC.');
    const token = tokenOf(mail?.text);
    // The HTML part has the same link, and the organisation's name escaped.
    expect(String(mail?.html)).toContain(`href="https://tally.example.com/dashboard/invitations/${token}"`);
    expect(String(mail?.html)).toContain('Acme &lt;Finance&gt;');

    const row = await h.ctx.db
      .selectFrom('invitations')
      .selectAll()
      .where('id', '=', invitation.id)
      .executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(tokenHash(token));
    expect(row.token_hash).not.toContain(token);

    const audit = await call('GET', '/v1/audit-log');
    expect(audit.json().data[0]).toMatchObject({
      action: 'invitation.created',
      target: `invitation:${invitation.id}`,
      after: { email: 'ann@example.com', role: 'analyst' },
    });
  });

  it('inviting a pending e-mail again sends that invitation again: a new link, the old one dead, the new role', async () => {
    const first = await call('POST', '/v1/invitations', { email: 'bob@example.com', role: 'analyst' });
    expect(first.statusCode).toBe(201);
    const [m1] = await deliver();
    const oldToken = tokenOf(m1?.text);
    h.clock.advance(DAY);
    const again = await call('POST', '/v1/invitations', { email: 'BOB@example.com', role: 'admin' });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toMatchObject({
      id: first.json().id,
      role: 'admin',
      sent_count: 2,
      expires_at: new Date(h.clock.now().getTime() + 7 * DAY).toISOString(),
    });
    const [m2] = await deliver();
    const newToken = tokenOf(m2?.text);
    expect(newToken).not.toBe(oldToken);
    const hashes = await h.ctx.db
      .selectFrom('invitations')
      .select('token_hash')
      .where('org_id', '=', org.id)
      .where('email', '=', 'bob@example.com')
      .execute();
    expect(hashes.map((r) => r.token_hash)).toEqual([tokenHash(newToken)]);
    const list = await call('GET', '/v1/invitations?status=pending');
    expect(list.json().data.filter((i: { email: string }) => i.email === 'bob@example.com')).toHaveLength(1);
  });

  it('resends with a new link and revokes; a revoked one cannot be resent', async () => {
    const created = (
      await call('POST', '/v1/invitations', { email: 'cy@example.com', role: 'analyst' })
    ).json();
    const [m1] = await deliver();
    // (A second apart: audit ids made in one millisecond need not sort in order across processes.)
    h.clock.advance(1000);
    const resent = await call('POST', `/v1/invitations/${created.id}/resend`);
    expect(resent.statusCode, resent.body).toBe(200);
    expect(resent.json()).toMatchObject({ sent_count: 2, status: 'pending' });
    const [m2] = await deliver();
    expect(tokenOf(m2?.text)).not.toBe(tokenOf(m1?.text));

    h.clock.advance(1000);
    const revoked = await call('DELETE', `/v1/invitations/${created.id}`);
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect(revoked.json()).toMatchObject({ status: 'revoked', revoked_at: h.clock.now().toISOString() });
    expect((await call('DELETE', `/v1/invitations/${created.id}`)).json().status).toBe('revoked');
    expectError(await call('POST', `/v1/invitations/${created.id}/resend`), 409, 'invitation_closed');
    expect((await call('GET', `/v1/invitations/${created.id}`)).json().status).toBe('revoked');
    const actions = (await call('GET', '/v1/audit-log?limit=100'))
      .json()
      .data.filter((a: { target: string }) => a.target === `invitation:${created.id}`)
      .map((a: { action: string }) => a.action);
    expect(actions).toEqual(['invitation.revoked', 'invitation.resent', 'invitation.created']);
    // Nothing more was sent.
    expect(await deliver()).toHaveLength(0);
  });

  it('an invitation expires 7 days after it was last sent; an expired one may be resent', async () => {
    const created = (
      await call('POST', '/v1/invitations', { email: 'dee@example.com', role: 'analyst' })
    ).json();
    await deliver();
    h.clock.advance(7 * DAY - 1);
    expect((await call('GET', `/v1/invitations/${created.id}`)).json().status).toBe('pending');
    h.clock.advance(1);
    expect((await call('GET', `/v1/invitations/${created.id}`)).json().status).toBe('expired');
    const expired = (await call('GET', '/v1/invitations?status=expired')).json().data;
    expect(expired.map((i: { id: string }) => i.id)).toContain(created.id);
    // Inviting the e-mail again makes a new invitation, the expired one stays as it was.
    const again = await call('POST', `/v1/invitations/${created.id}/resend`);
    expect(again.json()).toMatchObject({ status: 'pending', sent_count: 2 });
    expect((await deliver()).map((m) => m.subject)).toEqual(['[Tally] You are invited to Acme <Finance>']);
  });

  it('refuses an e-mail that is already a member (409 already_member), bad input (422), unknown ids (404)', async () => {
    expectError(
      await call('POST', '/v1/invitations', { email: 'OLGA@acme.test', role: 'analyst' }),
      409,
      'already_member',
    );
    expectError(
      await call('POST', '/v1/invitations', { email: 'not-an-email', role: 'analyst' }),
      422,
      'validation_error',
    );
    expectError(
      await call('POST', '/v1/invitations', { email: 'x@example.com', role: 'king' }),
      422,
      'validation_error',
    );
    expectError(
      await call('POST', '/v1/invitations', { email: 'x@example.com', role: 'analyst', extra: 1 }),
      422,
      'validation_error',
    );
    expectError(await call('POST', '/v1/invitations/inv_nope/resend'), 404, 'not_found');
    expectError(await call('DELETE', '/v1/invitations/inv_nope'), 404, 'not_found');
    expectError(await call('GET', '/v1/invitations?status=lost'), 422, 'validation_error');
    expect(await deliver()).toHaveLength(0);
  });

  it('an admin key may not invite an owner; an ingest key nothing; another organisation’s invitations are not found', async () => {
    expectError(
      await call('POST', '/v1/invitations', { email: 'boss@example.com', role: 'owner' }),
      403,
      'insufficient_role',
    );
    const ctx = await h.orgCtx(org);
    const ingest = await createApiKey({ ctx: h.ctx, orgId: ctx.org.id, name: 'agent', scope: 'ingest' });
    expect(ingest.api_key).toMatch(/^tally_live_/);
    expectError(
      await call('POST', '/v1/invitations', { email: 'e@example.com', role: 'analyst' }, ingest.api_key),
      403,
      'insufficient_scope',
    );
    const mine = (await call('GET', '/v1/invitations?limit=1')).json().data[0];
    const other = await h.createOrg();
    expectError(await call('GET', `/v1/invitations/${mine.id}`, undefined, other.apiKey), 404, 'not_found');
    expectError(
      await call('DELETE', `/v1/invitations/${mine.id}`, undefined, other.apiKey),
      404,
      'not_found',
    );
  });
});
