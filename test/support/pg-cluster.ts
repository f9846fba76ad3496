import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './serve.js';

const run = promisify(execFile);

/**
 * A throw-away PostgreSQL server of the test's own, on a free port in a temporary directory,
 * which the test may stop and start (never the machine's shared server). Missing PostgreSQL
 * binaries are an error, not a skip: the caller runs only when PostgreSQL tests are asked for.
 */
export interface PgCluster {
  port: number;
  /** A URL for the `postgres` database as the `postgres` user (trust authentication). */
  url: string;
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** Starts the server unless it runs. */
  ensureRunning(): Promise<void>;
  destroy(): Promise<void>;
}

function findBinDir(): string {
  const fromEnv = process.env.TALLY_TEST_PG_BINDIR;
  if (fromEnv) return fromEnv;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const newest = versions[0];
  if (newest === undefined) {
    throw new Error(
      'PostgreSQL server binaries (initdb, pg_ctl) were not found under /usr/lib/postgresql/*/bin; ' +
        'install them or set TALLY_TEST_PG_BINDIR',
    );
  }
  return join(root, newest, 'bin');
}

export async function createPgCluster(): Promise<PgCluster> {
  const bin = findBinDir();
  const dir = mkdtempSync(join(tmpdir(), 'tally-pg-'));
  const data = join(dir, 'data');
  // PostgreSQL refuses to run as root: as root, run its tools as the `postgres` user.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout: uid } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(uid.trim()), Number(gid.trim()));
  }
  const tool = (name: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, name), ...args]) : run(join(bin, name), args);

  const port = await freePort();
  await tool('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
  // fsync off spares the shared disk; a stopped server still keeps every commit (no OS crash here).
  const serverOptions = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
  const start = () =>
    tool('pg_ctl', ['start', '-D', data, '-w', '-t', '60', '-l', join(dir, 'log'), '-o', serverOptions]).then(
      () => undefined,
    );
  let running = false;
  await start();
  running = true;
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop(mode) {
      await tool('pg_ctl', ['stop', '-D', data, '-w', '-t', '60', '-m', mode]);
      running = false;
    },
    async start() {
      await start();
      running = true;
    },
    async ensureRunning() {
      if (running) return;
      await start();
      running = true;
    },
    async destroy() {
      try {
        if (running) await tool('pg_ctl', ['stop', '-D', data, '-w', '-t', '60', '-m', 'immediate']);
      } finally {
        running = false;
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
