import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { seed } from './seed.js';
import { unlimited } from './unlimited.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');

// One agent per metadata value; the filter's answer is the agents it matched.
const VALUES: Record<string, unknown> = {
  tiny: 1e-7,
  huge: 1e21,
  two: 2,
  twoPointFive: 2.5,
  twoText: '2',
  tinyText: '1e-7',
  yes: true,
  yesText: 'true',
  no: false,
  nothing: null,
  nested: { n: 2 },
  list: [2],
};

// The same answers on every engine.
const EXPECTED: Array<[string, string[]]> = [
  ['1e-7', ['tiny', 'tinyText']],
  ['0.0000001', ['tiny']],
  ['1E-7', ['tiny']],
  ['1e21', ['huge']],
  ['1000000000000000000000', ['huge']],
  ['1e+21', ['huge']],
  ['2', ['two', 'twoText']],
  ['2.0', ['two']],
  ['2.50', ['twoPointFive']],
  ['true', ['yes', 'yesText']],
  ['false', ['no']],
  ['null', []],
  ['x', []],
];

describe.each(ENGINES)('metadata.KEY=VALUE filter (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine, { now: new Date(NOW).toISOString(), rateLimiter: unlimited });
    const ctx = await h.orgCtx();
    // Each value twice: today (read from raw events) and three days ago (whole days, which
    // the rollups answer when the filter is on client_id, the client dimension).
    await seed(
      ctx,
      Object.entries(VALUES).flatMap(([agent, v]) =>
        [NOW - 3_600_000, NOW - 3 * 86_400_000].map((occurredAt) => ({
          agent,
          taskType: 'dev_bug_fix',
          outcome: 'success' as const,
          client: null,
          occurredAt,
          agentCost: null,
          metadata: { v, client_id: v },
        })),
      ),
    );
  });
  afterAll(async () => h.close());

  // metadata.client_id is the client dimension: served as the client filter where it selects
  // the same events, and as a metadata filter where it might not ('true', '2.0', …).
  const CASES = ['v', 'client_id'].flatMap((key) =>
    EXPECTED.map(([value, agents]) => [key, value, agents] as const),
  );

  it.each(CASES)('metadata.%s=%s matches the same events on every engine', async (key, value, agents) => {
    const url = `/v1/reports/time-saved?group_by=agent&metadata.${key}=${encodeURIComponent(value)}`;
    const res = await h.request({ method: 'GET', url });
    expect(res.statusCode).toBe(200);
    const rows = res.json().rows as Array<{ group: { agent_id: string }; events: number }>;
    expect(rows.map((r) => r.group.agent_id).sort()).toEqual([...agents].sort());
    for (const row of rows) expect(row.events).toBe(2);
  });
});
