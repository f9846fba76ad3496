import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticate } from '../../src/orgs/authenticator.js';
import type { Storage } from '../../src/storage/db.js';
import { createChildDatabase, runCli, type ChildDatabase, type CliResult } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';

const KEY_SHAPE = /^tally_live_([A-Za-z0-9]{8})_[A-Za-z0-9]{48}$/;

interface OrgView {
  id: string;
  name: string;
  plan: string;
  currency: string;
  default_hourly_rate: number;
  fallback_baseline_minutes: number | null;
  admin_emails: string[];
}

interface KeyView {
  id: string;
  org_id: string;
  name: string | null;
  revoked_at: string | null;
}

function json<T>(result: CliResult): T {
  expect(result.code, result.stderr).toBe(0);
  expect(result.stderr).toBe('');
  return JSON.parse(result.stdout) as T;
}

/** A failed command: exit code 1 and exactly one line on stderr, nothing on stdout. */
function failure(result: CliResult): string {
  expect(result.code).toBe(1);
  expect(result.stdout).toBe('');
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0] ?? '';
}

describe.each(ENGINES)('tally CLI (%s)', (engine) => {
  let database: ChildDatabase;
  let storage: Storage | undefined;
  let env: Record<string, string>;
  beforeAll(async () => {
    database = await createChildDatabase(engine);
    env = { TALLY_DATABASE_URL: database.url };
  });
  afterAll(async () => {
    await storage?.close();
    await database.destroy();
  });

  it('manages organisations and keys end to end', async () => {
    const migrated = json<{ applied: string[] }>(await runCli(['migrate', '--json'], env));
    expect(migrated.applied.length).toBeGreaterThan(0);
    const db = database.open();
    storage = db;
    if (engine === 'postgres') {
      // The search_path in the URL's `options` put the tables in the test schema.
      const where = await sql<{ schema: string }>`
        select table_schema as schema from information_schema.tables
        where table_name = 'api_keys' and table_schema = current_schema()`.execute(db.db);
      expect(where.rows).toHaveLength(1);
    }

    const created = json<{ org: OrgView; api_key: string }>(
      await runCli(
        [
          ...['orgs', 'create', '--name', 'X', '--plan', 'pro', '--currency', 'USD'],
          ...['--hourly-rate', '80', '--admin-email', 'a@b.c', '--json'],
        ],
        env,
      ),
    );
    expect(Object.keys(created).sort()).toEqual(['api_key', 'org']);
    expect(created.org).toMatchObject({
      name: 'X',
      plan: 'pro',
      currency: 'USD',
      default_hourly_rate: 80,
      admin_emails: ['a@b.c'],
    });
    expect(created.org.id).toMatch(/^org_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(created.api_key).toMatch(KEY_SHAPE);
    const orgId = created.org.id;
    const firstKeyId = KEY_SHAPE.exec(created.api_key)?.[1] ?? '';
    const auth = await authenticate({ ctx: db, token: created.api_key });
    expect(auth.org.id).toBe(orgId);
    expect(auth.keyId).toBe(firstKeyId);

    // Independent commands run side by side to keep the file fast.
    const [listed, planSet, keyCreated, unknownOrg] = await Promise.all([
      runCli(['orgs', 'list', '--json'], env),
      runCli(['orgs', 'set-plan', '--org', orgId, '--plan', 'enterprise', '--json'], env),
      runCli(['keys', 'create', '--org', orgId, '--name', 'ci', '--json'], env),
      runCli(['keys', 'create', '--org', 'org_nope', '--json'], env),
    ]);
    expect(json<{ data: OrgView[] }>(listed).data.map((o) => o.id)).toContain(orgId);
    expect(json<{ org: OrgView }>(planSet).org.plan).toBe('enterprise');
    const newKey = json<{ key: KeyView; api_key: string }>(keyCreated);
    expect(newKey.key).toMatchObject({ org_id: orgId, name: 'ci', revoked_at: null });
    expect(newKey.key.id).toMatch(/^[A-Za-z0-9]{8}$/);
    expect(KEY_SHAPE.exec(newKey.api_key)?.[1]).toBe(newKey.key.id);
    expect(failure(unknownOrg)).toMatch(/^tally: not_found: .*org_nope/);
    expect((await authenticate({ ctx: db, token: newKey.api_key })).org.plan).toBe('enterprise');

    const [updated, keysListed, keysOfUnknown] = await Promise.all([
      runCli(
        [
          'orgs',
          'update',
          '--org',
          orgId,
          '--hourly-rate',
          '90',
          '--fallback-baseline-minutes',
          '5',
          '--json',
        ],
        env,
      ),
      runCli(['keys', 'list', '--org', orgId, '--json'], env),
      runCli(['keys', 'list', '--org', 'org_nope', '--json'], env),
    ]);
    expect(json<{ org: OrgView }>(updated).org).toMatchObject({
      id: orgId,
      plan: 'enterprise',
      default_hourly_rate: 90,
      fallback_baseline_minutes: 5,
    });
    const keys = json<{ data: KeyView[] }>(keysListed).data;
    expect(keys.map((k) => k.id).sort()).toEqual([firstKeyId, newKey.key.id].sort());
    // The list never shows a secret or its hash.
    expect(JSON.stringify(keys)).not.toMatch(/tally_live_|hash/);
    expect(failure(keysOfUnknown)).toMatch(/^tally: not_found: .*org_nope/);

    expect(
      json<{ key: KeyView }>(await runCli(['keys', 'revoke', firstKeyId, '--json'], env)).key,
    ).toMatchObject({
      id: firstKeyId,
      revoked_at: expect.any(String),
    });
    await expect(authenticate({ ctx: db, token: created.api_key })).rejects.toMatchObject({
      code: 'key_revoked',
    });
    expect((await authenticate({ ctx: db, token: newKey.api_key })).org.id).toBe(orgId);
    // A revocation is audited like every other change (DESIGN §5), acted by the CLI (no key).
    const audit = await db.db.selectFrom('audit_log').selectAll().where('org_id', '=', orgId).execute();
    expect(audit.filter((e) => e.action === 'api_key.revoked')).toMatchObject([
      { target: `api_key:${firstKeyId}`, actor_key_id: null },
    ]);
  }, 90_000);
});

describe('tally CLI configuration', () => {
  it('stops with one line naming the variable on invalid configuration', async () => {
    const [role, plans] = await Promise.all([
      runCli(['orgs', 'list', '--json'], { TALLY_DATABASE_URL: 'sqlite::memory:', TALLY_ROLE: 'nope' }),
      runCli(['migrate'], {
        TALLY_DATABASE_URL: 'sqlite::memory:',
        TALLY_PLANS_FILE: '/nonexistent/plans.json',
      }),
    ]);
    expect(failure(role)).toMatch(/^tally: invalid configuration: TALLY_ROLE /);
    expect(failure(plans)).toMatch(/^tally: invalid configuration: TALLY_PLANS_FILE /);
  });

  it('refuses a digest time that is in the future or not RFC 3339', async () => {
    const env = { TALLY_DATABASE_URL: 'sqlite::memory:' };
    const [future, loose] = await Promise.all([
      runCli(['digests', 'send', '--at', '2999-01-04T09:00:00Z'], env),
      runCli(['digests', 'send', '--at', 'next monday'], env),
    ]);
    expect(failure(future)).toMatch(/^tally: --at must not be in the future/);
    expect(failure(loose)).toMatch(/^tally: --at must be an RFC 3339 time/);
  });
});
