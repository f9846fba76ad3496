import type { DbOrTrx } from '../storage/db.js';
import type { CustomTaskTypeRow, OverrideRow } from '../storage/schema.js';

/** Plain reads of the organisation's catalogue rows; every verb passes `db` or its open `trx`. */
export async function findCustomTaskType(
  db: DbOrTrx,
  orgId: string,
  key: string,
): Promise<CustomTaskTypeRow | undefined> {
  return db
    .selectFrom('custom_task_types')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('key', '=', key)
    .executeTakeFirst();
}

export async function findOverride(
  db: DbOrTrx,
  orgId: string,
  key: string,
): Promise<OverrideRow | undefined> {
  return db
    .selectFrom('task_type_overrides')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('task_key', '=', key)
    .executeTakeFirst();
}

export async function listCustomTaskTypes(db: DbOrTrx, orgId: string): Promise<CustomTaskTypeRow[]> {
  return db.selectFrom('custom_task_types').selectAll().where('org_id', '=', orgId).execute();
}

export async function listOverrides(db: DbOrTrx, orgId: string): Promise<OverrideRow[]> {
  return db.selectFrom('task_type_overrides').selectAll().where('org_id', '=', orgId).execute();
}
