import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChildDatabase, runCli, type ChildDatabase } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';
import { serveChild } from '../support/serve.js';

const LINK = /https?:\/\/\S+(\/dashboard\/first-owner\/[A-Za-z0-9_-]{43})/;

async function postForm(url: string, fields: Record<string, string>) {
  const origin = new URL(url).origin;
  return request(url, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
}

describe.each(ENGINES)('the first start and tally members create-owner (%s)', (engine) => {
  let database: ChildDatabase;
  beforeAll(async () => {
    database = await createChildDatabase(engine);
  });
  afterAll(async () => database.destroy());

  it('prints the bootstrap key and a one-time link that creates the first owner', async () => {
    const served = await serveChild({ TALLY_DATABASE_URL: database.url });
    try {
      const out = served.stdout();
      expect(out).toMatch(/tally_live_[A-Za-z0-9]{8}_[A-Za-z0-9]{48}/);
      const path = LINK.exec(out)?.[1] ?? '';
      expect(path).not.toBe('');
      const done = await postForm(`${served.base}${path}`, {
        email: 'first@example.com',
        password: 'correct horse battery staple',
      });
      expect(done.statusCode).toBe(303);
      await done.body.dump();
      const again = await postForm(`${served.base}${path}`, {
        email: 'second@example.com',
        password: 'correct horse battery staple',
      });
      expect(again.statusCode).toBe(404);
      await again.body.dump();
    } finally {
      served.child.kill('SIGTERM');
      await served.exited;
    }
    // Later starts print neither.
    const second = await serveChild({ TALLY_DATABASE_URL: database.url });
    try {
      expect(second.stdout()).not.toMatch(LINK);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });

  it('create-owner prints a link for a new e-mail, and makes an existing account owner', async () => {
    const env = { TALLY_DATABASE_URL: database.url };
    const orgs = await runCli(['orgs', 'list', '--json'], env);
    const orgId = (JSON.parse(orgs.stdout) as { data: Array<{ id: string }> }).data[0]?.id ?? '';
    const link = await runCli(['members', 'create-owner', '--org', orgId, '--email', 'New@Example.com'], env);
    expect(link.code, link.stderr).toBe(0);
    expect(link.stdout).toContain('new@example.com');
    expect(link.stdout).toMatch(LINK);
    const existing = await runCli(
      ['members', 'create-owner', '--org', orgId, '--email', 'first@example.com', '--json'],
      env,
    );
    expect(existing.code, existing.stderr).toBe(0);
    expect(JSON.parse(existing.stdout)).toMatchObject({ made: 'owner' });
    const bad = await runCli(['members', 'create-owner', '--org', orgId, '--email', 'not an address'], env);
    expect(bad.code).not.toBe(0);
  });
});
