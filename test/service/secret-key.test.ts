import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { sql } from 'kysely';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { newSecretKey, secretKeyId } from '../../src/crypto/secret-box.js';
import { createOrganization } from '../../src/orgs/organizations.js';
import { migrateToLatest } from '../../src/storage/db.js';
import { createWebhook } from '../../src/webhooks/subscriptions.js';
import { createChildDatabase, runCli, type CliResult } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';
import { TEST_SECRET_KEY } from '../support/secret-key.js';
import { printedApiKey, serveChild } from '../support/serve.js';
import { startReceiver } from '../webhooks/receiver.js';
import { verifyTallySignature } from '../webhooks/helpers.js';

const POSTGRES = ENGINES.includes('postgres');

/** A failed command: exit code 1, one line on stderr, nothing on stdout. */
function oneLine(result: CliResult): string {
  expect(result.code).toBe(1);
  expect(result.stdout).toBe('');
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0] ?? '';
}

describe.runIf(POSTGRES)('tally serve on PostgreSQL without TALLY_SECRET_KEY', () => {
  it('stops with one line saying how to set it, before touching the database', async () => {
    const database = await createChildDatabase('postgres');
    try {
      const result = await runCli(['serve'], { TALLY_DATABASE_URL: database.url, TALLY_SECRET_KEY: '' });
      expect(oneLine(result)).toMatch(
        /^tally: invalid configuration: TALLY_SECRET_KEY is not set: .*openssl rand -base64 32/,
      );
      const storage = database.open();
      try {
        const tables = await sql<{ n: number }>`select count(*) as n from information_schema.tables
          where table_schema = current_schema()`.execute(storage.db);
        expect(Number(tables.rows[0]?.n)).toBe(0);
      } finally {
        await storage.close();
      }
      const rotate = await runCli(['secrets', 'rotate'], {
        TALLY_DATABASE_URL: database.url,
        TALLY_SECRET_KEY: '',
      });
      expect(oneLine(rotate)).toMatch(/^tally: invalid configuration: TALLY_SECRET_KEY is not set/);
    } finally {
      await database.destroy();
    }
  }, 60_000);
});

describe('tally serve on SQLite without TALLY_SECRET_KEY (the quick start)', () => {
  it('generates a key file beside the database and signs with it after a restart', async () => {
    const database = await createChildDatabase('sqlite');
    const receiver = await startReceiver();
    const env = {
      TALLY_DATABASE_URL: database.url,
      TALLY_SECRET_KEY: '',
      TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    };
    const keyFile = join(dirname(database.url.slice('sqlite:'.length)), 't.key');
    try {
      const first = await serveChild(env);
      const apiKey = printedApiKey(first);
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      const key = readFileSync(keyFile, 'utf8');
      const created = await request(`${first.base}/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: receiver.url, event_types: ['event.created'] }),
      });
      expect(created.statusCode).toBe(201);
      const hook = (await created.body.json()) as { id: string; secret: string };
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);

      const second = await serveChild(env);
      try {
        expect(readFileSync(keyFile, 'utf8')).toBe(key);
        const ping = await request(`${second.base}/v1/webhooks/${hook.id}/test`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}` },
        });
        expect(ping.statusCode).toBe(202);
        await ping.body.dump();
        const deadline = Date.now() + 15_000;
        while (receiver.received.length === 0 && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 50));
        const [delivery] = receiver.received;
        if (!delivery) throw new Error('no delivery');
        expect(
          verifyTallySignature(String(delivery.headers['x-tally-signature']), delivery.body, hook.secret).ok,
        ).toBe(true);
      } finally {
        second.child.kill('SIGTERM');
        await second.exited;
      }
    } finally {
      await receiver.close();
      await database.destroy();
    }
  }, 90_000);
});

describe.each(ENGINES)('tally secrets rotate (%s)', (engine) => {
  const databases: Array<{ destroy(): Promise<void> }> = [];
  afterAll(async () => {
    for (const d of databases) await d.destroy();
  });

  it('seals every secret with the new key, then needs the old one no more', async () => {
    const database = await createChildDatabase(engine);
    databases.push(database);
    const storage = database.open();
    let hookId = '';
    try {
      await migrateToLatest(storage.db);
      const ctx = {
        db: storage.db,
        storage,
        engine,
        clock: new ManualClock(),
        config: loadConfig({ TALLY_SECRET_KEY: TEST_SECRET_KEY }),
      };
      const { org } = await createOrganization({ ctx, input: { name: 'Acme', plan: 'pro' } });
      const hook = await createWebhook({
        ctx: { ...ctx, org, actorKeyId: null },
        input: { url: 'https://hooks.example.com/x', event_types: ['event.created'] },
      });
      hookId = hook.id;
    } finally {
      await storage.close();
    }

    const next = newSecretKey();
    const rotate = (env: Record<string, string>) =>
      runCli(['secrets', 'rotate', '--json'], { TALLY_DATABASE_URL: database.url, ...env });
    const rotated = await rotate({ TALLY_SECRET_KEY: next, TALLY_SECRET_KEY_PREVIOUS: TEST_SECRET_KEY });
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(JSON.parse(rotated.stdout)).toEqual({
      key_id: secretKeyId(Buffer.from(next, 'base64')),
      sealed: 1,
      unreadable: [],
    });
    // Done: the new key alone finds nothing left.
    const again = await rotate({ TALLY_SECRET_KEY: next });
    expect(JSON.parse(again.stdout)).toMatchObject({ sealed: 0, unreadable: [] });
    // A key that opens none of it: named, and the command fails.
    const lost = await rotate({ TALLY_SECRET_KEY: newSecretKey() });
    expect(lost.code).toBe(1);
    expect(JSON.parse(lost.stdout)).toMatchObject({ sealed: 0, unreadable: [hookId] });
  }, 60_000);
});
