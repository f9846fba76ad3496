import type { ServiceCtx } from '../context.js';
import type { Db, DbOrTrx } from '../storage/db.js';
import type { FoldErrorCounts } from './failures.js';
import { FoldStage, type FoldStageOptions } from './stage.js';
import { readTail } from './tail.js';

const stages = new WeakMap<Db | DbOrTrx, FoldStage>();

/** The folding stage of a database handle (one per handle, like the track batcher). */
export function foldStageFor(ctx: ServiceCtx, options: FoldStageOptions = {}): FoldStage {
  let stage = stages.get(ctx.db);
  if (!stage) {
    stage = new FoldStage(ctx, options);
    stages.set(ctx.db, stage);
  }
  return stage;
}

/** The failed passes of the folding stage of a database handle (zeros when it has none). */
export function foldErrorCounts(db: Db | DbOrTrx): FoldErrorCounts {
  return stages.get(db)?.errors ?? { unavailable: 0, failed: 0 };
}

/** After a track call committed: wake this process's folding stage, or fold now (foldInline). */
export async function afterTrack(ctx: ServiceCtx): Promise<void> {
  if (!ctx.config.foldInline) {
    stages.get(ctx.db)?.wake();
    return;
  }
  const stage = foldStageFor(ctx);
  // PostgreSQL folds only below the oldest running transaction: a batch of another call still
  // committing keeps the tail a moment longer.
  for (let attempt = 0; attempt < 200; attempt++) {
    await stage.foldAll();
    if ((await readTail(ctx.db, ctx.engine, false)).headReceivedAt === null) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
