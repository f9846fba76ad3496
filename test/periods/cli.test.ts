import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChildDatabase, runCli, type ChildDatabase, type CliResult } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';

function json<T>(result: CliResult): T {
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as T;
}

describe.each(ENGINES)('tally periods (%s)', (engine) => {
  let database: ChildDatabase;
  let env: Record<string, string>;
  beforeAll(async () => {
    database = await createChildDatabase(engine);
    env = { TALLY_DATABASE_URL: database.url };
  });
  afterAll(async () => database.destroy());

  it(
    'closes, lists, prints and reopens a month with the same rules as the API',
    { timeout: 120_000 },
    async () => {
      const { org } = json<{ org: { id: string } }>(
        await runCli(['orgs', 'create', '--name', 'Acme', '--plan', 'pro', '--json'], env),
      );
      const { statement } = json<{
        statement: { id: string; month: string; closed_by: null; reason: string };
      }>(
        await runCli(
          ['periods', 'close', '2025-03', '--org', org.id, '--reason', 'March books', '--json'],
          env,
        ),
      );
      expect(statement).toMatchObject({ month: '2025-03', closed_by: null, reason: 'March books' });
      const again = await runCli(['periods', 'close', '2025-03', '--org', org.id, '--reason', 'again'], env);
      expect(again.code).not.toBe(0);
      expect(again.stderr).toContain('already closed');
      // A month that has not ended (the CLI runs on the real clock: the year 2999 has not).
      const early = await runCli(['periods', 'close', '2999-01', '--org', org.id, '--reason', 'x'], env);
      expect(early.code).not.toBe(0);
      expect(early.stderr).toContain('has not ended');

      const listed = json<{ data: Array<{ month: string; status: string }> }>(
        await runCli(['periods', 'list', '--org', org.id, '--json'], env),
      );
      expect(listed.data.map((p) => [p.month, p.status])).toEqual([['2025-03', 'closed']]);
      const csv = await runCli(['periods', 'statement', '2025-03', '--org', org.id, '--csv'], env);
      expect(csv.stdout).toBe(
        'dimension,key,events,hours_saved,cost_saved,agent_cost,net_saved,review_hours,review_cost\r\ntotal,,0,0,0,0,0,0,0\r\n',
      );
      const changes = json<{ entries: unknown[]; statement_id: string }>(
        await runCli(['periods', 'statement', '2025-03', '--org', org.id, '--changes', '--json'], env),
      );
      expect(changes).toMatchObject({ entries: [], statement_id: statement.id });

      const reopened = await runCli(
        ['periods', 'reopen', '2025-03', '--org', org.id, '--reason', 'fix'],
        env,
      );
      expect(reopened.code, reopened.stderr).toBe(0);
      expect(reopened.stdout).toContain('Reopened.');
      const shown = json<{ status: string; reopen_reason: string }>(
        await runCli(['periods', 'statement', '2025-03', '--org', org.id, '--json'], env),
      );
      expect(shown).toMatchObject({ status: 'open', reopen_reason: 'fix' });
    },
  );
});
