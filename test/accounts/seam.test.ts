import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actorAccountId, requireRole, type Actor } from '../../src/accounts/authorize.js';
import { openAccountSession } from '../../src/accounts/sessions.js';
import {
  addMembership,
  createAccount,
  ensureOwnerRemains,
  findAccountByEmail,
  membershipsOf,
} from '../../src/accounts/store.js';
import { verifyPassword } from '../../src/accounts/passwords.js';
import type { OrgCtx } from '../../src/context.js';
import { AppError } from '../../src/errors.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { page } from '../dashboard/support.js';

function codeOf(fn: () => unknown): string | null {
  try {
    fn();
    return null;
  } catch (error) {
    return error instanceof AppError ? error.code : 'other';
  }
}

describe('requireRole', () => {
  const ctxOf = (actor: Actor | undefined, actorKeyId: string | null = null) =>
    ({ actor, actorKeyId }) as Pick<OrgCtx, 'actor' | 'actorKeyId'>;
  const person = (role: 'owner' | 'admin' | 'analyst'): Actor => ({
    kind: 'person',
    accountId: 'acct_1',
    email: 'a@example.com',
    role,
  });

  it('lets each role do what its rank allows and refuses the rest with insufficient_role', () => {
    expect(codeOf(() => requireRole(ctxOf(person('owner')), 'owner'))).toBeNull();
    expect(codeOf(() => requireRole(ctxOf(person('admin')), 'admin'))).toBeNull();
    expect(codeOf(() => requireRole(ctxOf(person('admin')), 'owner'))).toBe('insufficient_role');
    expect(codeOf(() => requireRole(ctxOf(person('analyst')), 'analyst'))).toBeNull();
    expect(codeOf(() => requireRole(ctxOf(person('analyst')), 'admin'))).toBe('insufficient_role');
  });

  it('takes an admin key as admin, an ingest key as nothing, and the operator as owner', () => {
    const admin: Actor = { kind: 'api_key', keyId: 'k', scope: 'admin', createdByAccountId: 'acct_9' };
    const ingest: Actor = { kind: 'api_key', keyId: 'k', scope: 'ingest', createdByAccountId: null };
    expect(codeOf(() => requireRole(ctxOf(admin), 'admin'))).toBeNull();
    expect(codeOf(() => requireRole(ctxOf(admin), 'owner'))).toBe('insufficient_role');
    expect(codeOf(() => requireRole(ctxOf(ingest), 'analyst'))).toBe('insufficient_scope');
    expect(codeOf(() => requireRole(ctxOf({ kind: 'operator' }), 'owner'))).toBeNull();
    // Without an actor: no key is the operator, a key an admin key.
    expect(codeOf(() => requireRole(ctxOf(undefined, null), 'owner'))).toBeNull();
    expect(codeOf(() => requireRole(ctxOf(undefined, 'key_1'), 'owner'))).toBe('insufficient_role');
    expect(actorAccountId(admin)).toBe('acct_9');
    expect(actorAccountId(person('analyst'))).toBe('acct_1');
  });
});

describe.each(ENGINES)('accounts store and person sessions (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  it('creates an account with a lower-cased e-mail and a policy-checked password', async () => {
    const account = await createAccount({
      ctx: h.ctx,
      email: '  Ana.Lopez@Example.COM ',
      name: 'Ana',
      password: 'a long enough passphrase',
    });
    expect(account.email).toBe('ana.lopez@example.com');
    expect(account.hasPassword).toBe(true);
    expect((await findAccountByEmail(h.ctx, 'ANA.LOPEZ@example.com'))?.id).toBe(account.id);
    const row = await h.ctx.db
      .selectFrom('accounts')
      .selectAll()
      .where('id', '=', account.id)
      .executeTakeFirst();
    expect(await verifyPassword('a long enough passphrase', row?.password_hash ?? '')).toBe(true);
    await expect(createAccount({ ctx: h.ctx, email: 'ana.lopez@example.com' })).rejects.toMatchObject({
      code: 'validation_error',
    });
  });

  it('refuses short, common and e-mail passwords, and malformed e-mails', async () => {
    for (const [email, password] of [
      ['b@example.com', 'short'],
      ['b@example.com', '1qaz2wsx3edc'],
      ['b@example.com', 'Password2026!'],
      ['b@example.com', 'Sunshine123456'],
      ['longaddress@example.com', 'LongAddress@Example.com'],
      ['not an address', 'a long enough passphrase'],
    ] as const) {
      await expect(createAccount({ ctx: h.ctx, email, password })).rejects.toMatchObject({
        code: 'validation_error',
      });
    }
    expect(await findAccountByEmail(h.ctx, 'b@example.com')).toBeNull();
  });

  it('adds memberships, changes a role in place and keeps an owner', async () => {
    const other = await h.createOrg();
    const account = await createAccount({ ctx: h.ctx, email: 'multi@example.com' });
    await addMembership({ ctx: h.ctx, orgId: h.org.id, accountId: account.id, role: 'analyst' });
    await addMembership({ ctx: h.ctx, orgId: other.id, accountId: account.id, role: 'owner' });
    await addMembership({ ctx: h.ctx, orgId: h.org.id, accountId: account.id, role: 'admin' });
    const memberships = await membershipsOf(h.ctx, account.id);
    expect(memberships.map((m) => [m.orgId, m.role]).sort()).toEqual(
      [
        [h.org.id, 'admin'],
        [other.id, 'owner'],
      ].sort(),
    );
    await expect(ensureOwnerRemains(h.ctx, other.id)).resolves.toBeUndefined();
    await addMembership({ ctx: h.ctx, orgId: other.id, accountId: account.id, role: 'analyst' });
    await expect(ensureOwnerRemains(h.ctx, other.id)).rejects.toMatchObject({ code: 'last_owner' });
  });

  it('opens a session the dashboard resumes, and ends it once the membership is gone', async () => {
    const account = await createAccount({ ctx: h.ctx, email: 'viewer@example.com' });
    await addMembership({ ctx: h.ctx, orgId: h.org.id, accountId: account.id, role: 'analyst' });
    const opened = await openAccountSession({
      ctx: h.ctx,
      accountId: account.id,
      orgId: h.org.id,
      method: 'invitation',
      userAgent: 'test',
      ip: '127.0.0.1',
    });
    const cookie = `tally_session=${opened.token}`;
    const shown = await page(h, cookie, '/dashboard');
    expect(shown.statusCode).toBe(200);
    expect(shown.body).toContain(opened.csrfToken);

    await h.ctx.db
      .deleteFrom('memberships')
      .where('org_id', '=', h.org.id)
      .where('account_id', '=', account.id)
      .execute();
    const after = await page(h, cookie, '/dashboard');
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toBe('/dashboard/login?ended=removed');
    const left = await h.ctx.db
      .selectFrom('account_sessions')
      .select('id')
      .where('account_id', '=', account.id)
      .execute();
    expect(left).toEqual([]);
  });

  it('ends a person’s session after 60 idle minutes and 12 hours after it opened', async () => {
    const account = await createAccount({ ctx: h.ctx, email: 'timer@example.com' });
    await addMembership({ ctx: h.ctx, orgId: h.org.id, accountId: account.id, role: 'analyst' });
    const open = async () =>
      `tally_session=${(await openAccountSession({ ctx: h.ctx, accountId: account.id, orgId: h.org.id, method: 'password' })).token}`;
    const idle = await open();
    h.clock.advance(59 * 60_000);
    expect((await page(h, idle, '/dashboard')).statusCode).toBe(200);
    h.clock.advance(60 * 60_000);
    const ended = await page(h, idle, '/dashboard');
    expect(ended.headers.location).toBe('/dashboard/login?ended=expired');

    const busy = await open();
    for (let i = 0; i < 12; i++) {
      h.clock.advance(59 * 60_000);
      const res = await page(h, busy, '/dashboard');
      expect(res.statusCode, `after ${i + 1} × 59 minutes`).toBe(200);
    }
    // 12 × 59 minutes = 708: 12 more reach the 12 hours.
    h.clock.advance(12 * 60_000);
    expect((await page(h, busy, '/dashboard')).headers.location).toBe('/dashboard/login?ended=expired');
  });
});
