import pg from 'pg';
import type { TestProject } from 'vitest/node';
import {
  EnvironmentError,
  ensureChromium,
  environmentLine,
  findPostgres,
  findRedis,
  runNeedsBrowser,
} from './test-environment.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgRunPrefix: string;
  }
}

const STALE_MS = 2 * 60 * 60 * 1000;

async function withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T | undefined> {
  const url = process.env.TALLY_TEST_POSTGRES_URL;
  if (!url) return undefined;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function dropSchemas(client: pg.Client, names: string[]): Promise<void> {
  for (const name of names) await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
}

/**
 * Test files each work in their own PostgreSQL schema, named `t_<run>_<random>`. Kysely's
 * migrator lists the tables of every schema, so a schema dropped while another file migrates
 * breaks that file: schemas are dropped once, after the whole run (and stale ones from
 * crashed runs, older than two hours, before it).
 */
export default async function setup(project: TestProject) {
  await prepareEnvironment(project);
  // The PostgreSQL server's clock, not this process's: every run on the shared server must agree
  // on how old a schema is. A run whose clock is set ahead (faketime, a skewed machine) would
  // otherwise take the schemas of runs in progress for stale ones and drop them.
  const started =
    (await withClient(async (client) => {
      const { rows } = await client.query<{ ms: string }>(
        `select (extract(epoch from now()) * 1000)::bigint as ms`,
      );
      return Number(rows[0]?.ms);
    })) ?? Date.now();
  const prefix = `t_${started.toString(36)}_`;
  project.provide('pgRunPrefix', prefix);
  await withClient(async (client) => {
    const { rows } = await client.query<{ name: string }>(
      `select nspname as name from pg_namespace where nspname ~ '^t_[0-9a-z]+_[0-9a-f]+$'`,
    );
    const stale = rows
      .map((r) => r.name)
      .filter((name) => started - parseInt(name.split('_')[1] ?? '0', 36) > STALE_MS);
    await dropSchemas(client, stale);
  });
  return async () => {
    await withClient(async (client) => {
      const { rows } = await client.query<{ name: string }>(
        `select nspname as name from pg_namespace where starts_with(nspname, $1)`,
        [prefix],
      );
      await dropSchemas(
        client,
        rows.map((r) => r.name),
      );
    });
  };
}

/**
 * Finds PostgreSQL and Redis, brings Chromium when the run has browser tests, and says so in one
 * line; a missing piece that the run cannot do without stops it with one line saying what to do.
 */
async function prepareEnvironment(project: TestProject): Promise<void> {
  const log = (line: string) => process.stdout.write(`${line}\n`);
  try {
    const services = [await findPostgres(), await findRedis()];
    // Vitest's file filters of this run (an internal field: undefined when it has none).
    const filters = (project.vitest as unknown as { filenamePattern?: string[] }).filenamePattern;
    let chromium: string | null = null;
    if (runNeedsBrowser(project.config.root, filters)) {
      chromium = ensureChromium(log);
      process.env.TALLY_TEST_CHROMIUM = chromium;
    }
    log(environmentLine(services, chromium));
  } catch (error) {
    if (!(error instanceof EnvironmentError)) throw error;
    // One line and a failed run; a thrown error would bury it under Vitest's own report.
    process.stderr.write(`tests: ${error.message}\n`);
    process.exit(1);
  }
}
