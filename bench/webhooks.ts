/**
 * npm run bench:webhooks — tracks events at a steady rate (default 500/s for 20 s) against Tally
 * on SQLite with the delivery worker running, one webhook subscribed to `event.created` and
 * pointing at a local receiver. Prints deliveries/s, the backlog when sending stops and at the
 * end, and the delay from each 201 to the receipt of its delivery (p50, p99, max).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { Pool } from 'undici';
import { openStorage } from '../src/storage/db.js';

const RATE = Number(process.env.BENCH_RATE ?? 500);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 20);
const TOTAL = RATE * DURATION_S;

const dir = mkdtempSync(join(tmpdir(), 'tally-bench-webhooks-'));
const file = join(dir, 'tally.db');
const child = spawn(process.execPath, ['--import', 'tsx', 'bench/webhooks-server.ts', file], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const { port, apiKey } = await new Promise<{ port: number; apiKey: string }>((resolve, reject) => {
  createInterface({ input: child.stdout }).once('line', (line) => resolve(JSON.parse(line)));
  child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
});

// The receiver: notes when each event's delivery arrives.
const receivedAt = new Map<string, number>();
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const at = performance.now();
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { event_id: string } };
    if (!receivedAt.has(body.data.event_id)) receivedAt.set(body.data.event_id, at);
    res.writeHead(200).end('ok');
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverPort = (receiver.address() as AddressInfo).port;

const api = new Pool(`http://127.0.0.1:${port}`, { connections: 32 });
const headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
const hook = await api.request({
  method: 'POST',
  path: '/v1/webhooks',
  headers,
  body: JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hook`, event_types: ['event.created'] }),
});
if (hook.statusCode !== 201) throw new Error(`webhook creation failed: ${await hook.body.text()}`);
await hook.body.dump();

const createdAt = new Map<string, number>();
let failures = 0;
const body = JSON.stringify({
  agent_id: 'bench-agent',
  task_type: 'support_ticket_reply',
  outcome: 'success',
});
async function trackOne(): Promise<void> {
  const res = await api.request({ method: 'POST', path: '/v1/track', headers, body });
  const text = await res.body.text();
  if (res.statusCode !== 201) {
    failures++;
    return;
  }
  createdAt.set((JSON.parse(text) as { event_id: string }).event_id, performance.now());
}

process.stderr.write(`tracking ${RATE}/s for ${DURATION_S} s…\n`);
const start = performance.now();
const inflight: Promise<void>[] = [];
for (let i = 0; i < TOTAL; i++) {
  // Paced by the schedule, not by responses: a slow server does not lower the offered rate.
  const due = start + (i * 1000) / RATE;
  const wait = due - performance.now();
  if (wait > 1) await new Promise((r) => setTimeout(r, wait));
  inflight.push(trackOne());
}
await Promise.all(inflight);
const sendEnd = performance.now();
const db = openStorage(`sqlite:${file}`).db;
const backlog = async () =>
  Number(
    (
      await db
        .selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow()
    ).n,
  );
const backlogAtStop = await backlog();
const deadline = performance.now() + 15_000;
while (receivedAt.size < createdAt.size && performance.now() < deadline)
  await new Promise((r) => setTimeout(r, 50));
// Receipts come before their results are recorded; give the records a moment to land.
let backlogAtEnd = await backlog();
while (backlogAtEnd > 0 && performance.now() < deadline) {
  await new Promise((r) => setTimeout(r, 100));
  backlogAtEnd = await backlog();
}

const delays = [...createdAt].flatMap(([id, t]) => {
  const r = receivedAt.get(id);
  return r === undefined ? [] : [r - t];
});
delays.sort((a, b) => a - b);
const pct = (p: number) => delays[Math.min(delays.length - 1, Math.floor((p / 100) * delays.length))] ?? NaN;
const receipts = [...receivedAt.values()].sort((a, b) => a - b);
const spanS = ((receipts[receipts.length - 1] ?? 0) - (receipts[0] ?? 0)) / 1000;

const lines = [
  `events tracked (201):       ${createdAt.size} of ${TOTAL} in ${((sendEnd - start) / 1000).toFixed(1)} s (${failures} non-201)`,
  `offered rate:               ${RATE}/s`,
  `deliveries received:        ${receivedAt.size}`,
  `deliveries/s:               ${(receivedAt.size / spanS).toFixed(0)}`,
  `backlog when sending ended: ${backlogAtStop}`,
  `backlog at the end:         ${backlogAtEnd}`,
  `delay 201 → receipt:        p50 ${pct(50).toFixed(1)} ms, p99 ${pct(99).toFixed(1)} ms, max ${(delays[delays.length - 1] ?? NaN).toFixed(1)} ms`,
];
process.stdout.write(`${lines.join('\n')}\n`);

await db.destroy();
await api.close();
receiver.close();
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
rmSync(dir, { recursive: true, force: true });
