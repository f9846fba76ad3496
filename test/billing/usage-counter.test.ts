import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countEvents, monthEvents } from '../../src/billing/usage-counter.js';
import { createTestStorage, ENGINES, type TestStorage } from '../support/engines.js';

describe.each(ENGINES)('usage counter shards (%s)', (engine) => {
  let storage: TestStorage;
  beforeAll(async () => {
    storage = await createTestStorage(engine);
  });
  afterAll(async () => storage.destroy());

  it('adds uncapped counts to the given shard and sums every shard', async () => {
    expect(await countEvents(storage.db, 'org_a', '2026-11', 2, null, 0)).toBe(2);
    expect(await countEvents(storage.db, 'org_a', '2026-11', 3, null, 1)).toBe(3);
    expect(await countEvents(storage.db, 'org_a', '2026-11', 4, null, 2)).toBe(4);
    const rows = await storage.db
      .selectFrom('usage_monthly')
      .selectAll()
      .where('org_id', '=', 'org_a')
      .execute();
    expect(rows.map((r) => [Number(r.shard), Number(r.events)]).sort()).toEqual([
      [0, 2],
      [1, 3],
      [2, 4],
    ]);
    expect(await monthEvents(storage.db, 'org_a', '2026-11')).toBe(9);
    expect(await monthEvents(storage.db, 'org_a', '2026-12')).toBe(0);
  });

  it('caps on the total over all shards and counts only what it admits', async () => {
    await countEvents(storage.db, 'org_b', '2026-11', 5, null, 2);
    // Cap 8: 5 are counted already (in shard 2), so 3 of 4 fit.
    expect(await countEvents(storage.db, 'org_b', '2026-11', 4, 8, 1)).toBe(3);
    expect(await monthEvents(storage.db, 'org_b', '2026-11')).toBe(8);
    expect(await countEvents(storage.db, 'org_b', '2026-11', 1, 8, 1)).toBe(0);
    expect(await monthEvents(storage.db, 'org_b', '2026-11')).toBe(8);
  });
});
