import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { ServiceCtx } from '../../src/context.js';
import { newSecretKey, SecretBox, secretKeyId } from '../../src/crypto/secret-box.js';
import { migrateToLatest, type Engine } from '../../src/storage/db.js';
import { newWebhookSecret } from '../../src/webhooks/signing.js';
import { resealWebhookSecrets } from '../../src/webhooks/secret-storage.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { openBeforeMigration } from '../support/before-migration.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { TEST_SECRET_KEY } from '../support/secret-key.js';
import { ALLOW_PRIVATE, deliveriesOf, subscribe, verifyTallySignature } from './helpers.js';
import { startReceiver, type Receiver } from './receiver.js';

const NEW_KEY = newSecretKey();

/** Every text column of every row of `table`, as a dump or a backup would hold them. */
async function dumpOf(h: Harness, table: 'webhooks' | 'audit_log'): Promise<string> {
  return JSON.stringify(await h.storage.db.selectFrom(table).selectAll().execute());
}

/** A test ping to `hookId`, delivered by one worker pass of a process configured with `env`. */
async function pingWith(h: Harness, hookId: string, env: Record<string, string>) {
  expect((await h.request({ method: 'POST', url: `/v1/webhooks/${hookId}/test` })).statusCode).toBe(202);
  const config = loadConfig({ ...ALLOW_PRIVATE, TALLY_LOG_LEVEL: 'silent', ...env });
  const worker = new DeliveryWorker({ ...h.ctx, config }, { mailTransport: null });
  try {
    await worker.runOnce();
  } finally {
    await worker.stop();
  }
}

/** Whether `received` carries both signatures of `secret`. */
function signedWith(received: Receiver['received'][number], secret: string): boolean {
  const tally = verifyTallySignature(String(received.headers['x-tally-signature']), received.body, secret).ok;
  const standard = new Webhook(secret).verify(received.body, {
    'webhook-id': String(received.headers['webhook-id']),
    'webhook-timestamp': String(received.headers['webhook-timestamp']),
    'webhook-signature': String(received.headers['webhook-signature']),
  });
  return tally && standard !== null;
}

describe.each(ENGINES)('webhook signing secrets at rest (%s)', (engine) => {
  let h: Harness;
  const receivers: Receiver[] = [];
  beforeAll(async () => {
    // Real time: the standardwebhooks library checks the timestamp against the wall clock.
    h = await createHarness(engine, { now: new Date().toISOString(), env: ALLOW_PRIVATE });
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  afterAll(async () => h.close());

  const receiver = async () => {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  };

  it('stores the secret sealed (nowhere in a dump), returns it once, and signs deliveries with it', async () => {
    const r = await receiver();
    const hook = await subscribe(h, r.url);
    expect(hook.secret).toMatch(/^whsec_/);
    for (const table of ['webhooks', 'audit_log'] as const) {
      const dump = await dumpOf(h, table);
      expect(dump).not.toContain(hook.secret);
      expect(dump).not.toContain(hook.secret.slice('whsec_'.length));
    }
    const row = await h.storage.db
      .selectFrom('webhooks')
      .select(['secret', 'secret_key_id'])
      .where('id', '=', hook.id)
      .executeTakeFirstOrThrow();
    expect(row.secret_key_id).toBe(secretKeyId(Buffer.from(TEST_SECRET_KEY, 'base64')));
    expect(SecretBox.keyIdOf(row.secret)).toBe(row.secret_key_id);

    await pingWith(h, hook.id, { TALLY_SECRET_KEY: TEST_SECRET_KEY });
    expect(r.received).toHaveLength(1);
    expect(signedWith(r.received[0] ?? { headers: {}, body: '', at: 0 }, hook.secret)).toBe(true);
  });

  it('does not sign with a secret it cannot open: a moved ciphertext or a key not configured fails the attempt', async () => {
    const r = await receiver();
    const [one, two] = [await subscribe(h, r.url), await subscribe(h, r.url)];
    // An attacker with write access to the table copies one webhook's sealed secret into another.
    const sealed = await h.storage.db
      .selectFrom('webhooks')
      .select('secret')
      .where('id', '=', one.id)
      .executeTakeFirstOrThrow();
    await h.storage.db
      .updateTable('webhooks')
      .set({ secret: sealed.secret })
      .where('id', '=', two.id)
      .execute();
    await pingWith(h, two.id, { TALLY_SECRET_KEY: TEST_SECRET_KEY });
    // A process whose key is not the one that sealed it.
    await pingWith(h, one.id, { TALLY_SECRET_KEY: NEW_KEY });
    expect(r.received).toEqual([]);
    for (const id of [one.id, two.id]) {
      const [delivery] = await deliveriesOf(h, id);
      expect(delivery?.attempts[0]?.error).toMatch(/^the signing secret cannot be decrypted/);
      expect(delivery?.attempts[0]?.signature).toBeNull();
    }
  });

  it('signs with a plaintext row an older instance wrote until start-up seals it', async () => {
    const r = await receiver();
    const hook = await subscribe(h, r.url);
    // What an instance from before encryption writes during a rolling upgrade.
    await h.storage.db
      .updateTable('webhooks')
      .set({ secret: hook.secret, secret_key_id: null })
      .where('id', '=', hook.id)
      .execute();
    await pingWith(h, hook.id, { TALLY_SECRET_KEY: TEST_SECRET_KEY });
    expect(await resealWebhookSecrets(h.ctx, { only: 'plaintext' })).toEqual({ sealed: 1, unreadable: [] });
    expect(await dumpOf(h, 'webhooks')).not.toContain(hook.secret);
    await pingWith(h, hook.id, { TALLY_SECRET_KEY: TEST_SECRET_KEY });
    expect(r.received).toHaveLength(2);
    for (const received of r.received) expect(signedWith(received, hook.secret)).toBe(true);
  });
});

describe.each(ENGINES)('rotating the secret key (%s)', (engine) => {
  it('signs with the new key what the old one sealed; resealing moves every row to it', async () => {
    const h = await createHarness(engine, { now: new Date().toISOString(), env: ALLOW_PRIVATE });
    const r = await startReceiver();
    try {
      const hooks = [await subscribe(h, r.url), await subscribe(h, r.url)];
      await h.request({ method: 'DELETE', url: `/v1/webhooks/${hooks[1]?.id ?? ''}` });
      const [hook] = hooks;
      if (!hook) throw new Error('no webhook');
      const rotating = { TALLY_SECRET_KEY: NEW_KEY, TALLY_SECRET_KEY_PREVIOUS: TEST_SECRET_KEY };
      await pingWith(h, hook.id, rotating);
      expect(signedWith(r.received[0] ?? { headers: {}, body: '', at: 0 }, hook.secret)).toBe(true);

      const ctx: ServiceCtx = { ...h.ctx, config: loadConfig(rotating) };
      // Both rows, the deleted webhook's too; then nothing is left to do.
      expect(await resealWebhookSecrets(ctx, { only: 'all' })).toEqual({ sealed: 2, unreadable: [] });
      expect(await resealWebhookSecrets(ctx, { only: 'all' })).toEqual({ sealed: 0, unreadable: [] });
      const keyIds = await h.storage.db.selectFrom('webhooks').select('secret_key_id').distinct().execute();
      expect(keyIds).toEqual([{ secret_key_id: secretKeyId(Buffer.from(NEW_KEY, 'base64')) }]);

      // The old key dropped: deliveries still sign with the same secret.
      await pingWith(h, hook.id, { TALLY_SECRET_KEY: NEW_KEY });
      expect(r.received).toHaveLength(2);
      expect(signedWith(r.received[1] ?? { headers: {}, body: '', at: 0 }, hook.secret)).toBe(true);

      // A process with neither key: reported, left as they are.
      const lost: ServiceCtx = { ...h.ctx, config: loadConfig({ TALLY_SECRET_KEY: newSecretKey() }) };
      const counts = await resealWebhookSecrets(lost, { only: 'all' });
      expect(counts).toEqual({ sealed: 0, unreadable: hooks.map((x) => x.id).sort() });
    } finally {
      await r.close();
      await h.close();
    }
  });
});

describe.each(ENGINES)('webhook secrets written before encryption (%s)', (engine) => {
  const FIRST_NEW = '2026_11_27_0018_webhook_secrets_encrypted';

  async function seedPlaintext(engineOf: Engine) {
    const storage = await openBeforeMigration(engineOf, FIRST_NEW);
    const secrets = Array.from({ length: 5 }, () => newWebhookSecret());
    for (const [i, secret] of secrets.entries()) {
      await sql`insert into webhooks (id, org_id, url, description, event_types, secret, status,
          consecutive_failures, digest_since, created_at, updated_at, deleted_at)
        values (${`wh_old_${i}`}, 'org_old', 'https://hooks.example.com/x', null, '["event.created"]',
          ${secret}, 'active', 0, null, 0, 0, ${i === 4 ? 1 : null})`.execute(storage.db);
    }
    return { storage, secrets };
  }

  it('are sealed by start-up once, deleted webhooks included, and open to what they were', async () => {
    const { storage, secrets } = await seedPlaintext(engine);
    try {
      expect(await migrateToLatest(storage.db)).toContain(FIRST_NEW);
      const ctx: ServiceCtx = {
        db: storage.db,
        storage,
        engine,
        clock: new ManualClock(),
        config: loadConfig({ TALLY_SECRET_KEY: TEST_SECRET_KEY }),
      };
      const before = await storage.db.selectFrom('webhooks').select(['id', 'secret_key_id']).execute();
      expect(before.every((row) => row.secret_key_id === null)).toBe(true);

      const sealed = await resealWebhookSecrets(ctx, { only: 'plaintext' });
      expect(sealed).toEqual({ sealed: 5, unreadable: [] });
      // Idempotent: a second start (or a second instance) finds nothing left to seal.
      expect(await resealWebhookSecrets(ctx, { only: 'plaintext' })).toEqual({ sealed: 0, unreadable: [] });

      const rows = await storage.db
        .selectFrom('webhooks')
        .select(['id', 'secret', 'secret_key_id'])
        .orderBy('id')
        .execute();
      const box = ctx.config.secretBox;
      expect(JSON.stringify(rows)).not.toMatch(/whsec_/);
      expect(rows.map((row) => box?.open(row.secret, `webhooks.secret:${row.id}`))).toEqual(secrets);
    } finally {
      await storage.close();
    }
  });
});
