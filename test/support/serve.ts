import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { CLI, childEnv } from './child-process.js';

/** A `tally serve` child process (the real CLI, run from source) and what it printed. */
export interface ServedChild {
  child: ChildProcess;
  port: number;
  base: string;
  stdout(): string;
  stderr(): string;
  /** Whether the process is still running. */
  alive(): boolean;
  exited: Promise<number | null>;
}

/** A port nothing listens on right now, for a child to take. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Starts `tally serve` with `env` (plus a free TALLY_PORT) and waits until /healthz answers. */
export async function serveChild(env: Record<string, string>): Promise<ServedChild> {
  const port = await freePort();
  const child = spawn(process.execPath, [...CLI, 'serve'], {
    env: childEnv({ TALLY_PORT: String(port), ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let running = true;
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      running = false;
      resolve(code);
    }),
  );
  const base = `http://127.0.0.1:${port}`;
  const served: ServedChild = {
    child,
    port,
    base,
    stdout: () => stdout,
    stderr: () => stderr,
    alive: () => running,
    exited,
  };
  for (let attempt = 0; attempt < 300; attempt++) {
    if (!running) throw new Error(`tally serve exited: ${stderr}`);
    try {
      const res = await request(`${base}/healthz`);
      await res.body.dump();
      if (res.statusCode === 200) return served;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error(`tally serve did not become healthy: ${stderr}`);
}

/** The API key `tally serve` printed when it created the `default` organisation. */
export function printedApiKey(served: ServedChild): string {
  const key = /tally_live_[A-Za-z0-9]{8}_[A-Za-z0-9]{48}/.exec(served.stdout())?.[0];
  if (!key) throw new Error(`no API key printed: ${served.stdout()}`);
  return key;
}
