import { describe, expect, it } from 'vitest';
import { FOLD_BATCH, SQLITE_PASS_BUDGET_MS, sqlitePassLimit } from '../../src/tracking/fold.js';

describe('the SQLite folding stage sizes its passes to its budget', () => {
  it('takes as many events as the last pass folded in the budget, at its cost per event', () => {
    // 20 µs an event: the budget holds budget / 20 µs of them.
    expect(sqlitePassLimit(1_000, 20)).toBe(Math.round((SQLITE_PASS_BUDGET_MS * 1_000) / 20));
    expect(sqlitePassLimit(300, 15)).toBe(Math.round(SQLITE_PASS_BUDGET_MS / (15 / 300)));
  });

  it('never goes below its floor, nor above the batch, however slow or fast a pass was', () => {
    expect(sqlitePassLimit(2_000, 2_000)).toBe(100);
    expect(sqlitePassLimit(2_000, 1)).toBe(FOLD_BATCH.sqlite);
    // A pass timed at 0 ms counts as 1 ms.
    expect(sqlitePassLimit(5, 0)).toBe(Math.min(FOLD_BATCH.sqlite, Math.max(100, SQLITE_PASS_BUDGET_MS * 5)));
  });
});
