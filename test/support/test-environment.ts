import { spawnSync } from 'node:child_process';
import { accessSync, constants, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join, relative } from 'node:path';
import pg from 'pg';

/**
 * What `npm test` needs beyond the npm packages, found or brought before any test file runs
 * (global-setup.ts): the PostgreSQL and Redis the second engine and the shared rate limits are
 * tested on, and the Chromium the dashboard's browser tests drive. A newcomer on a machine that
 * has them runs everything without setting a variable; what is left out is said in one line.
 */

export const LOCAL_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';
export const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379';
export const DEFAULT_CHROMIUM = '/usr/bin/chromium';
const PROBE_TIMEOUT_MS = 2_000;

export interface Service {
  name: string;
  url: string | null;
  /** Why it is left out, when `url` is null. */
  reason?: string;
}

/** Raised to stop the run: its message is the one line that says what to do. */
export class EnvironmentError extends Error {}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}

async function postgresAnswers(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
  try {
    await client.connect();
    await client.query('select 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The local server's `test` database, created when the server answers without one. */
async function localPostgres(): Promise<void> {
  try {
    await postgresAnswers(LOCAL_POSTGRES_URL);
  } catch (error) {
    if ((error as { code?: unknown }).code !== '3D000') throw error;
    const client = new pg.Client({
      connectionString: LOCAL_POSTGRES_URL.replace(/\/test$/, '/postgres'),
      connectionTimeoutMillis: PROBE_TIMEOUT_MS,
    });
    await client.connect();
    try {
      await client.query('CREATE DATABASE test');
    } finally {
      await client.end();
    }
  }
}

function redisAnswers(url: string): Promise<void> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname || '127.0.0.1', port: Number(port || 6379) });
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => fail(new Error('no answer')));
    socket.on('error', fail);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => {
      socket.destroy();
      // A server that needs a password answers -NOAUTH: it answers, and the tests say the rest.
      if (/^[+-]/.test(data.toString())) resolve();
      else reject(new Error(`unexpected answer ${JSON.stringify(data.toString().slice(0, 40))}`));
    });
  });
}

function reasonOf(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown };
  return String(e.code ?? e.message ?? error);
}

/**
 * A service named by its variable must answer (the run stops otherwise: CI sets the variables so
 * that it never leaves an engine out); without the variable, the usual local address is used when
 * a server answers there, and the service is left out, with the reason, when none does.
 */
async function findService(
  name: string,
  variable: string,
  localUrl: string,
  probe: (url: string) => Promise<void>,
  probeLocal: () => Promise<void>,
): Promise<Service> {
  const given = process.env[variable];
  if (given) {
    try {
      await probe(given);
    } catch (error) {
      throw new EnvironmentError(
        `${variable}=${redact(given)} does not answer (${reasonOf(error)}): start ${name} or unset the variable.`,
      );
    }
    return { name, url: given };
  }
  try {
    await probeLocal();
  } catch (error) {
    return {
      name,
      url: null,
      reason: `nothing answers at ${redact(localUrl)} (${reasonOf(error)}); set ${variable} to use another`,
    };
  }
  process.env[variable] = localUrl;
  return { name, url: localUrl };
}

export function findPostgres(): Promise<Service> {
  return findService(
    'PostgreSQL',
    'TALLY_TEST_POSTGRES_URL',
    LOCAL_POSTGRES_URL,
    postgresAnswers,
    localPostgres,
  );
}

export function findRedis(): Promise<Service> {
  return findService('Redis', 'TALLY_TEST_REDIS_URL', LOCAL_REDIS_URL, redisAnswers, () =>
    redisAnswers(LOCAL_REDIS_URL),
  );
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function commandExists(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** The browser test files (every test file under a folder named `e2e`), relative to `root`. */
export function browserTestFiles(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.test.ts') && path.split('/').includes('e2e'))
        found.push(relative(root, path));
    }
  };
  walk(join(root, 'test'));
  return found;
}

/**
 * Whether the run includes a browser test: every run without file filters does, and a filtered
 * one when a filter matches one of their paths (Vitest matches filters as substrings of paths).
 */
export function runNeedsBrowser(root: string, filters: readonly string[] | undefined): boolean {
  if (!filters || filters.length === 0) return true;
  return browserTestFiles(root).some((file) => filters.some((filter) => file.includes(filter)));
}

/**
 * The Chromium of the browser tests: TALLY_TEST_CHROMIUM, or Debian's, installed with apt-get
 * when it is missing and this user may install packages. Otherwise the run stops with the
 * command that installs it: a browser test must never be skipped for want of a browser.
 */
export function ensureChromium(log: (line: string) => void): string {
  const given = process.env.TALLY_TEST_CHROMIUM;
  if (given) {
    if (!executable(given))
      throw new EnvironmentError(
        `TALLY_TEST_CHROMIUM=${given} is not an executable: point it at a Chromium binary.`,
      );
    return given;
  }
  if (executable(DEFAULT_CHROMIUM)) return DEFAULT_CHROMIUM;
  const hint = `The dashboard's browser tests need Chromium: run \`sudo apt-get install -y chromium\` (or set TALLY_TEST_CHROMIUM to a Chromium binary), then npm test again.`;
  if (process.getuid?.() !== 0 || !commandExists('apt-get')) throw new EnvironmentError(hint);
  log(`tests: installing Debian's chromium for the browser tests (apt-get install chromium)…`);
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', '--no-install-recommends', 'chromium'],
  ]) {
    const run = spawnSync('apt-get', args, {
      encoding: 'utf8',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (run.status !== 0) {
      const tail = `${run.stderr ?? ''}${run.stdout ?? ''}`.trim().split('\n').slice(-3).join(' | ');
      throw new EnvironmentError(`apt-get ${args.join(' ')} failed (${tail}). ${hint}`);
    }
  }
  if (!executable(DEFAULT_CHROMIUM)) throw new EnvironmentError(hint);
  return DEFAULT_CHROMIUM;
}

/** The one line a run starts with: what it uses, and what it left out and why. */
export function environmentLine(services: readonly Service[], chromium: string | null): string {
  const postgres = services.find((s) => s.name === 'PostgreSQL');
  const engines = postgres?.url ? `SQLite and PostgreSQL (${redact(postgres.url)})` : 'SQLite only';
  const used = services.filter((s) => s.url && s.name !== 'PostgreSQL').map((s) => `${s.name} (${s.url})`);
  if (chromium) used.push(`Chromium (${chromium})`);
  const left = services.filter((s) => !s.url).map((s) => `${s.name}: ${s.reason}`);
  return `tests: engines ${engines}; using ${used.length ? used.join(', ') : 'no other service'}${
    left.length ? `; left out ${left.join('; ')}` : ''
  }.`;
}
