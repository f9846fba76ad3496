import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';

// Every assumption that turns an event into figures (baselines, hourly rates, outcome credits)
// gets a history of values, each applying from an instant (`effective_from`, epoch ms; 0 = from
// the beginning). `revision` numbers an organisation's versions in the order they were recorded;
// `organizations.assumptions_revision` is the last one, read with every API key so that a
// process's copy of the history is known to be current. The values in force today stay in their
// columns and tables too. Existing values become each organisation's first versions.
// Units of `value`: minutes for baselines, micro-units for rates and credits; null = unset.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('assumption_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull())
    .addColumn('revision', 'bigint', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('value', 'double precision')
    .addColumn('effective_from', 'bigint', (c) => c.notNull())
    .addColumn('recorded_at', 'bigint', (c) => c.notNull())
    .addColumn('actor_key_id', 'text')
    .addColumn('reason', 'text')
    .addColumn('restatement_id', 'text')
    .execute();
  await db.schema
    .createIndex('assumption_versions_org_revision')
    .unique()
    .on('assumption_versions')
    .columns(['org_id', 'revision'])
    .execute();
  await db.schema
    .alterTable('organizations')
    .addColumn('assumptions_revision', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();

  const orgs = await db.selectFrom('organizations').selectAll().execute();
  const overrides = await db.selectFrom('task_type_overrides').selectAll().execute();
  const customs = await db.selectFrom('custom_task_types').selectAll().execute();
  for (const org of orgs) {
    const rows: Array<{ kind: string; key: string; value: number; at: number }> = [];
    const at = Number(org.created_at);
    rows.push({ kind: 'default_hourly_rate', key: '', value: Number(org.default_hourly_rate_micros), at });
    const rates = JSON.parse(String(org.category_hourly_rates)) as Record<string, number>;
    for (const [category, rate] of Object.entries(rates)) {
      rows.push({ kind: 'category_hourly_rate', key: category, value: Math.round(rate * 1e6), at });
    }
    const credits = JSON.parse(String(org.outcome_credit)) as Record<string, number>;
    for (const [outcome, credit] of Object.entries(credits)) {
      rows.push({ kind: 'outcome_credit', key: outcome, value: Math.round(credit * 1e6), at });
    }
    if (org.fallback_baseline_minutes !== null) {
      rows.push({ kind: 'fallback_baseline', key: '', value: Number(org.fallback_baseline_minutes), at });
    }
    for (const o of overrides.filter((r) => r.org_id === org.id)) {
      rows.push({
        kind: 'baseline_override',
        key: o.task_key,
        value: Number(o.baseline_minutes_override),
        at: Number(o.updated_at),
      });
    }
    for (const c of customs.filter((r) => r.org_id === org.id)) {
      const created = Number(c.created_at);
      rows.push({
        kind: 'custom_baseline',
        key: c.key,
        value: Number(c.default_baseline_minutes),
        at: created,
      });
      if (c.hourly_rate_micros !== null) {
        rows.push({
          kind: 'custom_hourly_rate',
          key: c.key,
          value: Number(c.hourly_rate_micros),
          at: created,
        });
      }
    }
    if (rows.length === 0) continue;
    await db
      .insertInto('assumption_versions')
      .values(
        rows.map((r, i) => ({
          id: `asv_${versionId(r.at)}`,
          org_id: org.id,
          revision: i + 1,
          kind: r.kind,
          key: r.key,
          value: r.value,
          effective_from: 0,
          recorded_at: r.at,
          actor_key_id: null,
          reason: null,
          restatement_id: null,
        })),
      )
      .execute();
    await db
      .updateTable('organizations')
      .set({ assumptions_revision: rows.length })
      .where('id', '=', org.id)
      .execute();
  }
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A ULID of its own (migrations import no application code). */
function versionId(at: number): string {
  let time = '';
  let t = Math.max(0, Math.floor(at));
  for (let i = 0; i < 10; i++) {
    time = (CROCKFORD[t % 32] ?? '0') + time;
    t = Math.floor(t / 32);
  }
  const random = [...randomBytes(16)].map((b) => CROCKFORD[b % 32] ?? '0').join('');
  return time + random;
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('organizations').dropColumn('assumptions_revision').execute();
  await db.schema.dropTable('assumption_versions').execute();
}
