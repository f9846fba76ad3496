import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChildDatabase, runCli, type ChildDatabase, type CliResult } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';

function json<T>(result: CliResult): T {
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as T;
}

interface BudgetOut {
  id: string;
  name: string;
  scope: string;
  scope_value: string | null;
  amount: number;
  thresholds: number[];
  status: { state: string; spend: number };
}

describe.each(ENGINES)('tally budgets (%s)', (engine) => {
  let database: ChildDatabase;
  let env: Record<string, string>;
  beforeAll(async () => {
    database = await createChildDatabase(engine);
    env = { TALLY_DATABASE_URL: database.url };
  });
  afterAll(async () => database.destroy());

  it('creates, lists, changes and deletes budgets with the same rules as the API', async () => {
    const { org } = json<{ org: { id: string } }>(
      await runCli(['orgs', 'create', '--name', 'Acme', '--plan', 'pro', '--json'], env),
    );
    const created = json<{ budget: BudgetOut }>(
      await runCli(
        [
          'budgets',
          'create',
          '--org',
          org.id,
          '--name',
          'Bot',
          '--scope',
          'agent',
          '--scope-value',
          'bot-1',
          '--amount',
          '50',
          '--thresholds',
          '100,50',
          '--json',
        ],
        env,
      ),
    ).budget;
    expect(created).toMatchObject({
      name: 'Bot',
      scope: 'agent',
      scope_value: 'bot-1',
      amount: 50,
      thresholds: [50, 100],
      status: { state: 'on_track', spend: 0 },
    });
    const human = await runCli(['budgets', 'list', '--org', org.id], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(
      `${created.id}  Bot  (agent=bot-1)  0 of 50 EUR (0%), forecast 0, on_track`,
    );
    const updated = json<{ budget: BudgetOut }>(
      await runCli(['budgets', 'update', created.id, '--org', org.id, '--amount', '80', '--json'], env),
    ).budget;
    expect(updated.amount).toBe(80);
    const refused = await runCli(
      ['budgets', 'create', '--org', org.id, '--name', 'x', '--amount', '5', '--scope-value', 'bot-1'],
      env,
    );
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr.trim()).toBe(
      'tally: validation_error: must be absent for a budget of the whole organisation',
    );
    expect((await runCli(['budgets', 'delete', created.id, '--org', org.id], env)).stdout).toBe(
      `Deleted ${created.id}.\n`,
    );
    expect(
      json<{ data: unknown[] }>(await runCli(['budgets', 'list', '--org', org.id, '--json'], env)).data,
    ).toEqual([]);
    const gone = await runCli(['budgets', 'delete', created.id, '--org', org.id], env);
    expect(gone.stderr.trim()).toBe(`tally: not_found: Budget ${created.id} was not found.`);
  }, 120_000);
});
