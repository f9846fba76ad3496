import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLI, childEnv, runCli } from '../support/child-process.js';
import { freePort } from '../support/serve.js';

/** The plan table with a low Free track rate, so 429s are easy to provoke. */
export const LOW_RATE_PLANS = {
  free: {
    track_rate_per_second: 2,
    other_rate_per_second: 20,
    included_events_per_month: 10000,
    hard_cap: true,
    overage_tiers: [],
  },
  pro: {
    track_rate_per_second: 200,
    other_rate_per_second: 50,
    included_events_per_month: 100000,
    hard_cap: false,
    overage_tiers: [{ up_to: null, unit_price_eur: 0.0005 }],
  },
  enterprise: {
    track_rate_per_second: 1000,
    other_rate_per_second: 100,
    included_events_per_month: 1000000,
    hard_cap: false,
    overage_tiers: [{ up_to: null, unit_price_eur: 0.0001 }],
  },
};

export interface Served {
  baseUrl: string;
  /** The `default` organisation's key (Enterprise), printed by the first start. */
  apiKey: string;
  env: Record<string, string>;
  /** A new organisation with its key. */
  createOrg(plan: 'free' | 'pro' | 'enterprise'): Promise<string>;
  stop(): Promise<void>;
}

/** A real `tally serve` on a fresh SQLite database, with a low Free track rate. */
export async function startTally(): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), 'tally-clients-'));
  const plans = join(dir, 'plans.json');
  writeFileSync(plans, JSON.stringify(LOW_RATE_PLANS));
  const port = await freePort();
  const env = {
    TALLY_DATABASE_URL: `sqlite:${join(dir, 'tally.db')}`,
    TALLY_PORT: String(port),
    TALLY_PLANS_FILE: plans,
    TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    TALLY_WEBHOOK_RETRY_DELAYS: '0,1,1',
  };
  const child: ChildProcess = spawn(process.execPath, [...CLI, 'serve'], {
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const baseUrl = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`tally serve exited: ${stderr}`);
    const key = /tally_live_[A-Za-z0-9_]+/.exec(stdout)?.[0];
    const healthy = await fetch(`${baseUrl}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (healthy && key) {
      return {
        baseUrl,
        apiKey: key,
        env,
        async createOrg(plan) {
          const result = await runCli(
            ['orgs', 'create', '--name', `org-${plan}`, '--plan', plan, '--json'],
            env,
          );
          if (result.code !== 0) throw new Error(result.stderr);
          return (JSON.parse(result.stdout) as { api_key: string }).api_key;
        },
        async stop() {
          child.kill('SIGTERM');
          await exited;
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    if (i > 300) {
      child.kill('SIGKILL');
      throw new Error(`tally serve did not start: ${stderr}`);
    }
    await sleep(100);
  }
}

/**
 * A TCP proxy in front of the service that lets the first `drop` requests reach it and then
 * closes the client's connection instead of relaying the answer: the service did the work, the
 * client never heard.
 */
export async function startDroppingProxy(target: string, drop = 1) {
  const { hostname, port } = new URL(target);
  let toDrop = drop;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    const upstream = connect(Number(port), hostname);
    sockets.add(upstream);
    const dropping = toDrop > 0;
    if (dropping) toDrop--;
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => {
      if (dropping) {
        client.destroy();
        upstream.destroy();
      } else client.write(chunk);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: proxyPort } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${proxyPort}`,
    dropped: () => drop - toDrop,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A local webhook receiver that keeps every delivery as received. */
export async function startReceiver() {
  const received: Delivery[] = [];
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    async waitFor(predicate: (d: Delivery) => boolean, timeoutMs = 45_000): Promise<Delivery> {
      const until = Date.now() + timeoutMs;
      while (Date.now() < until) {
        const found = received.find(predicate);
        if (found) return found;
        await sleep(100);
      }
      throw new Error('no matching delivery arrived');
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
