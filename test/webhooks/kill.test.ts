import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { ServiceCtx } from '../../src/context.js';
import { createOrganization } from '../../src/orgs/organizations.js';
import { createWebhook } from '../../src/webhooks/subscriptions.js';
import { enqueueMessage } from '../../src/webhooks/outbox.js';
import { DeliveryWorker } from '../../src/webhooks/worker.js';
import { createTestStorage } from '../support/engines.js';
import { TEST_SECRET_KEY } from '../support/secret-key.js';
import { startReceiver } from './receiver.js';

const dir = mkdtempSync(join(tmpdir(), 'tally-kill-'));

describe('a `tally worker` process killed mid-delivery (sqlite file)', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('loses nothing: after restart the delivery completes under the next attempt number', async () => {
    const receiver = await startReceiver('hang');
    const file = join(dir, 'tally.db');
    const env = {
      TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      TALLY_DATABASE_URL: `sqlite:${file}`,
      TALLY_SECRET_KEY: TEST_SECRET_KEY,
    };
    const storage = await createTestStorage('sqlite', { file });
    const config = loadConfig({ ...env, TALLY_LOG_LEVEL: 'silent' });
    const ctx: ServiceCtx = { db: storage.db, engine: 'sqlite', clock: new ManualClock(), config, storage };
    const { org } = await createOrganization({ ctx, input: { name: 'Acme', plan: 'pro' } });
    const hook = await createWebhook({
      ctx: { ...ctx, org, actorKeyId: null },
      input: { url: receiver.url, event_types: ['event.created'] },
    });
    const { messageId } = await enqueueMessage({
      db: storage.db,
      orgId: org.id,
      type: 'event.created',
      payload: { hello: 'world' },
      webhookIds: [hook.id],
      at: new Date(),
      firstDelaySeconds: 0,
    });

    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'worker'], {
      env: { ...process.env, ...env },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const deadline = Date.now() + 20_000;
    while (receiver.received.length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(receiver.received).toHaveLength(1);
    child.kill('SIGKILL');
    await exited;

    receiver.mode = 200;
    // The restarted worker, once the dead claim's lease (timeout + 60 s) has run out.
    const clock = new ManualClock(new Date(Date.now() + config.webhookTimeoutMs + 61_000));
    const worker = new DeliveryWorker({ ...ctx, clock }, { mailTransport: null });
    await worker.runOnce();
    clock.advance(30_000);
    await worker.runOnce();
    await worker.stop();

    expect(
      receiver.received.map((m) => [m.headers['x-tally-message-id'], m.headers['x-tally-attempt']]),
    ).toEqual([
      [messageId, '1'],
      [messageId, '2'],
    ]);
    const delivery = await storage.db.selectFrom('webhook_deliveries').selectAll().executeTakeFirstOrThrow();
    expect(delivery.status).toBe('succeeded');
    await storage.close();
    await receiver.close();
  }, 60_000);
});
