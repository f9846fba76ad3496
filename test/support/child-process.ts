import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openStorage, type Engine, type Storage } from '../../src/storage/db.js';
import { TEST_SECRET_KEY } from './secret-key.js';

const POSTGRES_URL = process.env.TALLY_TEST_POSTGRES_URL;

/** The command line of the real CLI, run from source. */
export const CLI = ['--import', 'tsx', 'src/cli/main.ts'];

/**
 * Environment of a child process: ours without any TALLY_ setting, plus the test key for secrets
 * at rest (`TALLY_SECRET_KEY: ''` leaves it unset), plus `env`.
 */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TALLY_')));
  return { ...base, TALLY_LOG_LEVEL: 'silent', TALLY_SECRET_KEY: TEST_SECRET_KEY, ...env };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...CLI, ...args],
      { env: childEnv(env), timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** An empty database a child process can reach through TALLY_DATABASE_URL. */
export interface ChildDatabase {
  /** The TALLY_DATABASE_URL for the child. */
  url: string;
  /** Opens the same database in the test process. */
  open(): Storage;
  destroy(): Promise<void>;
}

export async function createChildDatabase(engine: Engine): Promise<ChildDatabase> {
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tally-child-'));
    const url = `sqlite:${join(dir, 't.db')}`;
    return {
      url,
      open: () => openStorage(url),
      destroy: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  if (!POSTGRES_URL) throw new Error('TALLY_TEST_POSTGRES_URL is not set');
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  // libpq's `options` parameter, which node-postgres reads from the URL as well.
  const separator = POSTGRES_URL.includes('?') ? '&' : '?';
  const url = `${POSTGRES_URL}${separator}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  return {
    url,
    open: () => openStorage(POSTGRES_URL, { schema, poolSize: 2 }),
    async destroy() {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
    },
  };
}
