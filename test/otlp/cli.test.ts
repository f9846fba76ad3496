import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { getOrganization } from '../../src/orgs/organizations.js';
import { ingestSpans } from '../../src/otlp/ingest.js';
import type { MappingRule } from '../../src/otlp/rules.js';
import { decodeJsonExport } from '../../src/otlp/decode.js';
import type { Storage } from '../../src/storage/db.js';
import { createChildDatabase, runCli, type ChildDatabase, type CliResult } from '../support/child-process.js';
import { ENGINES } from '../support/engines.js';
import { agentRun, exportRequest } from './otlp-json.js';

function json<T>(result: CliResult): T {
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as T;
}

describe.each(ENGINES)('tally otlp (%s)', (engine) => {
  let database: ChildDatabase;
  let storage: Storage;
  let env: Record<string, string>;
  let orgId: string;

  beforeAll(async () => {
    database = await createChildDatabase(engine);
    env = { TALLY_DATABASE_URL: database.url };
    orgId = json<{ org: { id: string } }>(
      await runCli(['orgs', 'create', '--name', 'Cli', '--plan', 'pro', '--json'], env),
    ).org.id;
    storage = database.open();
  });
  afterAll(async () => {
    await storage?.close();
    await database.destroy();
  });

  it('adds, lists and removes mapping rules, and lists unresolved runs', { timeout: 180_000 }, async () => {
    // A run without a task type, received as an export would be.
    const config = loadConfig({ TALLY_LOG_LEVEL: 'silent', TALLY_DATABASE_URL: database.url });
    const ctx = { db: storage.db, engine, clock: systemClock, config, storage };
    const org = await getOrganization({ ctx, id: orgId });
    const run = agentRun({ endMs: Date.now(), agent: { 'gen_ai.agent.name': 'cli-bot' } });
    await ingestSpans({
      ctx: { ...ctx, org, actorKeyId: null },
      spans: decodeJsonExport(exportRequest(run.all)).spans,
    });
    const unresolved = json<{ data: { agent_id: string }[] }>(
      await runCli(['otlp', 'unresolved', '--org', orgId, '--json'], env),
    );
    expect(unresolved.data.map((r) => r.agent_id)).toEqual(['cli-bot']);

    const added = json<MappingRule & { resolved_runs: number }>(
      await runCli(
        [
          'otlp',
          'mappings',
          'add',
          '--org',
          orgId,
          '--agent-name',
          'cli-bot',
          '--task-type',
          'dev_code_review',
          '--json',
        ],
        env,
      ),
    );
    expect(added).toMatchObject({
      kind: 'task_type',
      field: 'agent_name',
      value: 'cli-bot',
      task_type: 'dev_code_review',
      resolved_runs: 1,
    });
    const client = json<MappingRule>(
      await runCli(['otlp', 'mappings', 'add', '--org', orgId, '--client-from', 'tenant.id', '--json'], env),
    );
    expect(client).toMatchObject({ kind: 'client_id', attribute: 'tenant.id' });
    const resource = await runCli(
      [
        'otlp',
        'mappings',
        'add',
        '--org',
        orgId,
        '--resource-attribute',
        'service.name=billing',
        '--task-type',
        'ops_invoice_processing',
      ],
      env,
    );
    expect(resource.code, resource.stderr).toBe(0);
    expect(resource.stdout).toContain('resource attribute service.name = billing → ops_invoice_processing');

    const listed = json<{ data: MappingRule[] }>(
      await runCli(['otlp', 'mappings', 'list', '--org', orgId, '--json'], env),
    );
    expect(listed.data.map((r) => r.kind)).toEqual(['client_id', 'task_type', 'task_type']);
    const removed = await runCli(['otlp', 'mappings', 'remove', added.id, '--org', orgId], env);
    expect(removed.stdout).toContain(`Removed ${added.id}.`);
    expect(
      json<{ data: MappingRule[] }>(await runCli(['otlp', 'mappings', 'list', '--org', orgId, '--json'], env))
        .data,
    ).toHaveLength(2);
  });

  it('fails with one line for a rule the API would refuse', { timeout: 120_000 }, async () => {
    const twoMatches = await runCli(
      [
        'otlp',
        'mappings',
        'add',
        '--org',
        orgId,
        '--agent-name',
        'a',
        '--span-name',
        'b',
        '--task-type',
        'dev_bug_fix',
      ],
      env,
    );
    expect(twoMatches.code).toBe(1);
    expect(twoMatches.stderr.trim().split('\n')).toHaveLength(1);
    const unknown = await runCli(
      ['otlp', 'mappings', 'add', '--org', orgId, '--agent-name', 'a', '--task-type', 'nope'],
      env,
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^tally: unknown_task_type: /);
  });
});
