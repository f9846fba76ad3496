import type { DbOrTrx } from '../storage/db.js';
import type { EventRow, ReportRollupsTable } from '../storage/schema.js';

export const DAY_MS = 86_400_000;

/** The grains kept per day; a report uses the smallest one that covers its group_by and filters. */
export const GRAINS = ['all', 'agent', 'task_type', 'client'] as const;
export type Grain = (typeof GRAINS)[number];

/** The outcome value of the rollup rows that hold every outcome together. */
export const ALL_OUTCOMES = '*';

/** Rollup key of a client: a prefix keeps "no client" ('') apart from an empty client id ('c'). */
export function clientKey(clientId: string | null): string {
  return clientId === null ? '' : `c${clientId}`;
}

type Delta = Omit<ReportRollupsTable, 'shard'> & { shard: number };

function keyOf(row: EventRow, grain: Grain): string {
  switch (grain) {
    case 'all':
      return '';
    case 'agent':
      return row.agent_id;
    case 'task_type':
      return row.task_type;
    case 'client':
      return clientKey(row.client_id);
  }
}

/** The rollup increments of some events, merged by rollup key (one delta per key). */
export function rollupDeltas(rows: readonly EventRow[], shard = 0): Delta[] {
  const byKey = new Map<string, Delta>();
  for (const row of rows) {
    const day = Math.floor(Number(row.occurred_at) / DAY_MS);
    for (const grain of GRAINS) {
      const key = keyOf(row, grain);
      // Each event counts in its outcome's row and in the all-outcomes row ('*'): reports
      // without an outcome filter read a third of the rows.
      for (const outcome of [ALL_OUTCOMES, row.outcome]) {
        // A batch can hold several organisations' events (group commit): the org is part of the key.
        const id = `${row.org_id}\u0001${grain}\u0001${day}\u0001${key}\u0001${outcome}`;
        let delta = byKey.get(id);
        if (!delta) {
          delta = {
            org_id: row.org_id,
            grain,
            day,
            key,
            outcome,
            shard,
            events: 0,
            hours_saved_micros: 0,
            cost_saved_micros: 0,
            agent_cost_micros: 0,
          };
          byKey.set(id, delta);
        }
        delta.events += 1;
        delta.hours_saved_micros += Number(row.hours_saved_micros);
        delta.cost_saved_micros += Number(row.cost_saved_micros);
        delta.agent_cost_micros += Number(row.agent_cost_micros ?? 0);
      }
    }
  }
  // Sorted so that concurrent transactions lock the rows they share in the same order.
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, delta]) => delta);
}

// 9 columns per row stays well under SQLite's and PostgreSQL's bound-parameter limits.
const CHUNK = 1000;

/** Adds deltas to the rollups: one multi-row upsert per chunk (one statement per tracked event). */
export async function applyRollupDeltas(db: DbOrTrx, deltas: readonly Delta[]): Promise<void> {
  for (let i = 0; i < deltas.length; i += CHUNK) {
    await db
      .insertInto('report_rollups')
      .values(deltas.slice(i, i + CHUNK))
      .onConflict((oc) =>
        oc.columns(['org_id', 'grain', 'day', 'key', 'outcome', 'shard']).doUpdateSet((eb) => ({
          events: eb('report_rollups.events', '+', eb.ref('excluded.events')),
          hours_saved_micros: eb(
            'report_rollups.hours_saved_micros',
            '+',
            eb.ref('excluded.hours_saved_micros'),
          ),
          cost_saved_micros: eb(
            'report_rollups.cost_saved_micros',
            '+',
            eb.ref('excluded.cost_saved_micros'),
          ),
          agent_cost_micros: eb(
            'report_rollups.agent_cost_micros',
            '+',
            eb.ref('excluded.agent_cost_micros'),
          ),
        })),
      )
      .execute();
  }
}

/** Keeps the rollups exact for events being created in the open transaction `db`. */
export async function recordRollups(db: DbOrTrx, rows: readonly EventRow[], shard = 0): Promise<void> {
  await applyRollupDeltas(db, rollupDeltas(rows, shard));
}
