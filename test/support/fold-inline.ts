import type { ServiceCtx } from '../../src/context.js';
import { FoldStage } from '../../src/fold/stage.js';
import { readTail, tailHeadAt } from '../../src/fold/tail.js';
import { onTrackCommitted } from '../../src/tracking/track.js';

/**
 * Folds everything committed before the call with `stage`, then waits until the tails are empty:
 * PostgreSQL folds only below the oldest running transaction, so a batch of another call still
 * committing keeps the tail a moment longer (on a loaded machine, seconds: it waits up to 10 s).
 */
export async function foldCommitted(ctx: ServiceCtx, stage: FoldStage): Promise<void> {
  for (let attempt = 0; attempt < 2000; attempt++) {
    await stage.foldAll();
    // Both tails empty: the events' and the adjustments' (src/ledger/).
    if (tailHeadAt(await readTail(ctx.db, ctx.engine, false)) === null) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Each track call on `ctx.db` folds the events committed so far before it answers, so a test
 * may read the rollups, usage counts and webhook messages right after tracking (in production
 * the stage folds on its own, DESIGN §11). Returns the function that stops it.
 */
export function foldOnCommit(ctx: ServiceCtx, stage: FoldStage = new FoldStage(ctx)): () => void {
  return onTrackCommitted(ctx, () => foldCommitted(ctx, stage));
}
