import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, childEnv, createChildDatabase, type ChildDatabase } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';
import { printedApiKey, serveChild, type ServedChild } from '../support/serve.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';

const THRESHOLDS = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];

interface Worker {
  child: ChildProcess;
  exited: Promise<number | null>;
}

/** `tally worker` (the real CLI from source), once it says it runs. */
async function startWorker(env: Record<string, string>): Promise<Worker> {
  const child = spawn(process.execPath, [...CLI, 'worker'], {
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  child.stdout?.resume();
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`tally worker did not start: ${stderr}`)), 60_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.includes('tally worker running')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', () => reject(new Error(`tally worker exited: ${stderr}`)));
  });
  return { child, exited };
}

/**
 * Budget thresholds crossed once across processes: an API process and two `tally worker`
 * processes on one PostgreSQL schema, each worker re-evaluating every second while the spend
 * rises through ten thresholds; one worker is killed with SIGKILL half-way and another started.
 * Every threshold reaches the receiver exactly once. (PostgreSQL only: several processes on one
 * database is a PostgreSQL deployment, DESIGN "Scale-out". The test tracks at the real clock,
 * so it assumes no UTC month ends while it runs.)
 */
describe.skipIf(!ENGINES.includes('postgres'))('alerts from two worker processes on one PostgreSQL', () => {
  let database: ChildDatabase | null = null;
  let receiver: Receiver | null = null;
  let api: ServedChild | null = null;
  const workers: Worker[] = [];

  afterEach(async () => {
    for (const w of workers.splice(0)) {
      w.child.kill('SIGKILL');
      await w.exited;
    }
    if (api?.alive()) {
      api.child.kill('SIGKILL');
      await api.exited;
    }
    await receiver?.close();
    await database?.destroy();
  });

  it('sends each threshold once, one worker killed mid-way', async () => {
    database = await createChildDatabase('postgres');
    receiver = await startReceiver(200);
    const env = {
      TALLY_DATABASE_URL: database.url,
      TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      TALLY_ALERT_CHECK_SECONDS: '1',
    };
    api = await serveChild({ ...env, TALLY_ROLE: 'api' });
    const apiKey = printedApiKey(api);
    const call = async (method: 'POST', path: string, body: object) => {
      const res = await request(`${api?.base}${path}`, {
        method,
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.body.text();
      expect(res.statusCode, text).toBeLessThan(300);
      return JSON.parse(text) as { id: string };
    };
    await call('POST', '/v1/webhooks', {
      url: receiver.url,
      event_types: ['budget.threshold_crossed', 'budget.forecast_exceeded'],
    });
    const budget = await call('POST', '/v1/budgets', {
      name: 'All agents',
      scope: 'org',
      amount: 100,
      thresholds: THRESHOLDS,
    });
    workers.push(await startWorker(env), await startWorker(env));

    for (let step = 1; step <= 10; step++) {
      await call('POST', '/v1/track', {
        agent_id: 'bot',
        task_type: 'support_ticket_reply',
        outcome: 'success',
        agent_cost: 10,
      });
      if (step === 5) {
        // A crash: the worker may be mid-pass; its replacement derives what is due again.
        const killed = workers.splice(1, 1)[0];
        killed?.child.kill('SIGKILL');
        await killed?.exited;
        workers.push(await startWorker(env));
      }
      // Both workers re-evaluate (every second) before the next step.
      await sleep(2_200);
    }
    const expected = THRESHOLDS.length + 1;
    const deadline = Date.now() + 30_000;
    const distinct = () => new Set(receiver?.received.map((m) => m.headers['x-tally-message-id'])).size;
    while (distinct() < expected && Date.now() < deadline) await sleep(200);
    // Deliveries that could still be on their way would show up here.
    await sleep(2_000);

    // One body per message (a delivery cut short by the kill may be attempted again, as any
    // delivery: the message id stays the same).
    const byMessage = new Map(
      receiver.received.map((m) => [String(m.headers['x-tally-message-id']), m.body]),
    );
    const bodies = [...byMessage.values()].map(
      (body) => JSON.parse(body) as { type: string; data: { budget: { id: string }; threshold?: number } },
    );
    expect(bodies.every((b) => b.data.budget.id === budget.id)).toBe(true);
    const thresholds = bodies
      .filter((b) => b.type === 'budget.threshold_crossed')
      .map((b) => b.data.threshold);
    expect(thresholds.sort((x, y) => (x ?? 0) - (y ?? 0))).toEqual(THRESHOLDS);
    expect(bodies.filter((b) => b.type === 'budget.forecast_exceeded')).toHaveLength(1);
    expect(byMessage.size).toBe(expected);

    const storage = database.open();
    try {
      const alerts = await storage.db
        .selectFrom('alerts')
        .select(['kind', 'threshold', 'message_id'])
        .execute();
      expect(alerts).toHaveLength(expected);
      expect(new Set(alerts.map((a) => a.message_id)).size).toBe(expected);
    } finally {
      await storage.close();
    }
  }, 180_000);
});
