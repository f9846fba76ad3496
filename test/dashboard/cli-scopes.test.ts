import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChildDatabase, runCli, type ChildDatabase } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';

interface KeyView {
  id: string;
  scope: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

describe.each(ENGINES)('tally keys --scope (%s)', (engine) => {
  let database: ChildDatabase;
  let env: Record<string, string>;
  let orgId: string;
  beforeAll(async () => {
    database = await createChildDatabase(engine);
    env = { TALLY_DATABASE_URL: database.url };
    const created = await runCli(['orgs', 'create', '--name', 'Scoped', '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    orgId = (JSON.parse(created.stdout) as { org: { id: string } }).org.id;
  });
  afterAll(async () => database.destroy());

  it('creates ingest and admin keys and lists each with its scope', async () => {
    // Each command is a child process (several seconds on a loaded machine): the independent
    // ones run together.
    const [ingest, plain] = await Promise.all([
      runCli(['keys', 'create', '--org', orgId, '--scope', 'ingest', '--json'], env),
      runCli(['keys', 'create', '--org', orgId, '--name', 'ops'], env),
    ]);
    expect(ingest.code, ingest.stderr).toBe(0);
    const key = (JSON.parse(ingest.stdout) as { key: KeyView }).key;
    expect(key.scope).toBe('ingest');
    expect(plain.stdout).toMatch(/^Created admin key [A-Za-z0-9]{8}\./);
    const [list, text] = await Promise.all([
      runCli(['keys', 'list', '--org', orgId, '--json'], env),
      runCli(['keys', 'list', '--org', orgId], env),
    ]);
    const keys = (JSON.parse(list.stdout) as { data: KeyView[] }).data;
    expect(keys.map((k) => k.scope).sort()).toEqual(['admin', 'admin', 'ingest']);
    expect(keys.every((k) => k.last_used_at === null)).toBe(true);
    expect(text.stdout).toContain(`${key.id}  ingest`);
  }, 120_000);

  it('refuses an unknown scope in one line', async () => {
    const res = await runCli(['keys', 'create', '--org', orgId, '--scope', 'root'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("'root' is invalid");
  }, 60_000);
});
