import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMembership, createAccount } from '../../src/accounts/store.js';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { ServiceCtx } from '../../src/context.js';
import type { Storage } from '../../src/storage/db.js';
import { createChildDatabase, runCli, type ChildDatabase, type CliResult } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';

function json<T>(result: CliResult): T {
  expect(result.code, result.stderr).toBe(0);
  expect(result.stderr).toBe('');
  return JSON.parse(result.stdout) as T;
}

function failure(result: CliResult): string {
  expect(result.code).toBe(1);
  expect(result.stdout).toBe('');
  return result.stderr.trim();
}

interface MemberView {
  account_id: string;
  email: string;
  role: string;
}

describe.each(ENGINES)('tally members (%s)', (engine) => {
  let database: ChildDatabase;
  let storage: Storage;
  let env: Record<string, string>;
  let ctx: ServiceCtx;
  let orgId: string;
  beforeAll(async () => {
    database = await createChildDatabase(engine);
    env = { TALLY_DATABASE_URL: database.url, TALLY_PUBLIC_URL: 'https://tally.example.com' };
    orgId = json<{ org: { id: string } }>(await runCli(['orgs', 'create', '--name', 'Acme', '--json'], env))
      .org.id;
    storage = database.open();
    ctx = { db: storage.db, engine: storage.engine, clock: systemClock, config: loadConfig({}) };
    const olga = await createAccount({ ctx, email: 'olga@acme.test', name: 'Olga' });
    await addMembership({ ctx, orgId, accountId: olga.id, role: 'owner' });
    const bob = await createAccount({ ctx, email: 'bob@acme.test' });
    await addMembership({ ctx, orgId, accountId: bob.id, role: 'analyst' });
  });
  afterAll(async () => {
    await storage.close();
    await database.destroy();
  });

  it('invites (the e-mail queued, the link printed once), again resends; list, role, remove', async () => {
    const invited = json<{
      invitation: { id: string; email: string; role: string; status: string };
      url: string;
    }>(
      await runCli(
        ['members', 'invite', '--org', orgId, '--email', 'Ann@Example.com', '--role', 'owner', '--json'],
        env,
      ),
    );
    expect(invited.invitation).toMatchObject({ email: 'ann@example.com', role: 'owner', status: 'pending' });
    expect(invited.url).toMatch(/^https:\/\/tally\.example\.com\/dashboard\/invitations\/[A-Za-z0-9_-]{43}$/);
    const mails = await storage.db
      .selectFrom('emails')
      .select(['to_address', 'body'])
      .where('org_id', '=', orgId)
      .execute();
    expect(mails).toHaveLength(1);
    expect(mails[0]?.to_address).toBe('ann@example.com');
    expect(mails[0]?.body).toContain(invited.url);

    const again = await runCli(
      ['members', 'invite', '--org', orgId, '--email', 'ann@example.com', '--role', 'admin'],
      env,
    );
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^Sent again ann@example\.com as admin \(inv_[0-9A-Z]{26}\), until /);
    expect(again.stdout).toContain('Link (single use): https://tally.example.com/dashboard/invitations/');
    expect(again.stdout).not.toContain(invited.url);

    const listed = json<{ data: MemberView[]; invitations: Array<{ email: string; role: string }> }>(
      await runCli(['members', 'list', '--org', orgId, '--json'], env),
    );
    expect(listed.data.map((m) => [m.email, m.role])).toEqual([
      ['bob@acme.test', 'analyst'],
      ['olga@acme.test', 'owner'],
    ]);
    expect(listed.invitations).toEqual([
      expect.objectContaining({ email: 'ann@example.com', role: 'admin' }),
    ]);
    const human = await runCli(['members', 'list', '--org', orgId], env);
    expect(human.stdout).toMatch(/acct_\w+ {2}olga@acme\.test \(Olga\) {2}owner {2}since /);
    expect(human.stdout).toMatch(/inv_\w+ {2}ann@example\.com {2}admin {2}invited, until /);

    const promoted = json<{ member: MemberView }>(
      await runCli(
        ['members', 'role', '--org', orgId, '--email', 'BOB@acme.test', '--role', 'admin', '--json'],
        env,
      ),
    );
    expect(promoted.member).toMatchObject({ email: 'bob@acme.test', role: 'admin' });
    expect(
      failure(
        await runCli(
          ['members', 'role', '--org', orgId, '--email', 'olga@acme.test', '--role', 'admin'],
          env,
        ),
      ),
    ).toMatch(/^tally: last_owner: An organisation keeps at least one owner/);
    expect(
      failure(await runCli(['members', 'remove', '--org', orgId, '--email', 'olga@acme.test'], env)),
    ).toMatch(/^tally: last_owner:/);
    const removed = await runCli(['members', 'remove', '--org', orgId, '--email', 'bob@acme.test'], env);
    expect(removed.stdout).toBe('Removed bob@acme.test.\n');
    expect(
      failure(await runCli(['members', 'remove', '--org', orgId, '--email', 'bob@acme.test'], env)),
    ).toBe('tally: not_found: The member was not found.');
    expect(
      failure(
        await runCli(
          ['members', 'invite', '--org', orgId, '--email', 'olga@acme.test', '--role', 'admin'],
          env,
        ),
      ),
    ).toMatch(/^tally: already_member: olga@acme\.test is already a member/);
    const bad = await runCli(
      ['members', 'invite', '--org', orgId, '--email', 'x@example.com', '--role', 'king'],
      env,
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('Allowed choices are owner, admin, analyst');
    expect(failure(await runCli(['members', 'list', '--org', 'org_nope'], env))).toMatch(
      /^tally: not_found:/,
    );
    const audit = await storage.db
      .selectFrom('audit_log')
      .select('action')
      .where('org_id', '=', orgId)
      .orderBy('id')
      .execute();
    expect(audit.map((a) => a.action)).toEqual([
      'invitation.created',
      'invitation.resent',
      'member.role_changed',
      'member.removed',
    ]);
  }, 120_000);

  it('resends an invitation with a new link and revokes it; a revoked one is not sent again', async () => {
    const invited = json<{ invitation: { id: string }; url: string }>(
      await runCli(
        ['members', 'invite', '--org', orgId, '--email', 'cy@example.com', '--role', 'analyst', '--json'],
        env,
      ),
    );
    const id = invited.invitation.id;
    const resent = await runCli(['members', 'resend', id, '--org', orgId], env);
    expect(resent.code, resent.stderr).toBe(0);
    expect(resent.stdout).toMatch(new RegExp(`^Sent again cy@example\\.com as analyst \\(${id}\\), until `));
    const link = /Link \(single use\): (\S+)/.exec(resent.stdout)?.[1];
    expect(link).toMatch(/^https:\/\/tally\.example\.com\/dashboard\/invitations\/[A-Za-z0-9_-]{43}$/);
    expect(link).not.toBe(invited.url);
    const mails = await storage.db
      .selectFrom('emails')
      .select('body')
      .where('to_address', '=', 'cy@example.com')
      .execute();
    expect(mails.map((m) => m.body.includes(link ?? '-'))).toEqual([false, true]);

    const revoked = json<{ invitation: { id: string; status: string } }>(
      await runCli(['members', 'revoke', id, '--org', orgId, '--json'], env),
    );
    expect(revoked.invitation).toMatchObject({ id, status: 'revoked' });
    const human = await runCli(['members', 'revoke', id, '--org', orgId], env);
    expect(human.stdout.trim()).toBe(`Revoked the invitation of cy@example.com (${id}).`);
    expect(failure(await runCli(['members', 'resend', id, '--org', orgId], env))).toMatch(
      /^tally: invitation_closed: The invitation was revoked/,
    );
    expect(failure(await runCli(['members', 'revoke', 'inv_nope', '--org', orgId], env))).toMatch(
      /^tally: not_found:/,
    );
    const pending = json<{ invitations: Array<{ id: string }> }>(
      await runCli(['members', 'list', '--org', orgId, '--json'], env),
    );
    expect(pending.invitations.map((i) => i.id)).not.toContain(id);
  }, 120_000);
});
