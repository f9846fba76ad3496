import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { createOrganization } from '../../src/orgs/organizations.js';
import { createWebhook } from '../../src/webhooks/subscriptions.js';
import { createTestStorage } from '../support/engines.js';
import { TEST_SECRET_KEY } from '../support/secret-key.js';
import { startReceiver } from './receiver.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'tally-digest-cli-'));

describe('tally digests send (sqlite file)', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // `--at` names one week; the worker's own scheduler (which reads the real clock) must not run,
  // or this test would pass only in some weeks.
  it('queues and delivers the week --at names once, to every current subscriber', async () => {
    const receiver = await startReceiver();
    const file = join(dir, 'tally.db');
    const storage = await createTestStorage('sqlite', { file });
    const env = {
      TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      TALLY_DATABASE_URL: `sqlite:${file}`,
      TALLY_SECRET_KEY: TEST_SECRET_KEY,
    };
    const ctx = {
      db: storage.db,
      storage,
      engine: 'sqlite' as const,
      // Subscribed weeks before --at: the scheduler would catch up older weeks, --at sends one.
      clock: new ManualClock('2026-10-20T00:00:00.000Z'),
      config: loadConfig({ ...env, TALLY_LOG_LEVEL: 'silent' }),
    };
    const { org } = await createOrganization({ ctx, input: { name: 'Acme', plan: 'pro' } });
    const hook = await createWebhook({
      ctx: { ...ctx, org, actorKeyId: null },
      input: { url: receiver.url, event_types: ['weekly.digest'] },
    });
    // Subscribed after the send time --at names: still gets that week (an admin showing a new
    // subscriber last week's digest).
    ctx.clock.set('2026-11-20T00:00:00.000Z');
    const late = await createWebhook({
      ctx: { ...ctx, org, actorKeyId: null },
      input: { url: receiver.url, event_types: ['weekly.digest'] },
    });
    await storage.close();

    const send = async () => {
      const { stdout } = await run(
        'npx',
        ['tsx', 'src/cli/main.ts', 'digests', 'send', '--at', '2026-11-16T09:00:00Z', '--json'],
        { env: { ...process.env, ...env } },
      );
      return JSON.parse(stdout) as { queued: Array<{ webhook_id: string; week: string }> };
    };
    const first = await send();
    expect(first.queued).toHaveLength(2);
    expect(first.queued).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ webhook_id: hook.id, week: '2026-11-09' }),
        expect.objectContaining({ webhook_id: late.id, week: '2026-11-09' }),
      ]),
    );
    expect((await send()).queued).toEqual([]);
    expect(receiver.received).toHaveLength(2);
    for (const delivery of receiver.received) {
      const body = JSON.parse(delivery.body) as { type: string; data: { period: { from: string } } };
      expect(body.type).toBe('weekly.digest');
      expect(body.data.period.from).toBe('2026-11-09T00:00:00.000Z');
    }
    await receiver.close();
  }, 60_000);
});
