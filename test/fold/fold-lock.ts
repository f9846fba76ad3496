import pg from 'pg';

/**
 * The first key of the advisory lock the folding stage holds for its pass (FOLD_LOCK in
 * src/fold/plan.ts; the second is its schema's hash: the sessions' names tell them apart).
 */
const FOLD_LOCK_CLASS = 7311002;

export interface FoldLockHolders {
  /** Calls `fn` with the holder (its application_name) of each later sample that has one. */
  onHeld(fn: ((holder: string) => void) | null): void;
  /** Stops sampling: how many samples saw each session holding the lock, and waiting for it. */
  stop(): Promise<{ samples: Record<string, number>; waits: number }>;
}

/**
 * PostgreSQL: samples pg_locks every few milliseconds for the folding stage's lock, held by a
 * session of one of `applicationNames`. There is no per-process fold metric; this shows which
 * processes' stages ran passes, and how often one waited for the other's.
 */
export function foldLockHolders(applicationNames: readonly string[]): FoldLockHolders {
  const url = process.env.TALLY_TEST_POSTGRES_URL;
  if (!url) throw new Error('TALLY_TEST_POSTGRES_URL is not set');
  const client = new pg.Client({ connectionString: url });
  const samples: Record<string, number> = {};
  let waits = 0;
  let running = true;
  const listener: { onHeld: ((holder: string) => void) | null } = { onHeld: null };
  const sampling = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ name: string; granted: boolean }>(
        `SELECT a.application_name AS name, l.granted FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.locktype = 'advisory' AND l.classid = $1 AND l.objsubid = 2
           AND a.application_name = ANY($2)`,
        [FOLD_LOCK_CLASS, applicationNames],
      );
      for (const row of rows) {
        if (row.granted) {
          samples[row.name] = (samples[row.name] ?? 0) + 1;
          listener.onHeld?.(row.name);
        } else waits += 1;
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await client.end();
  })();
  return {
    onHeld(fn) {
      listener.onHeld = fn;
    },
    async stop() {
      running = false;
      await sampling;
      return { samples, waits };
    },
  };
}
