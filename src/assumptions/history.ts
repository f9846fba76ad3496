import type { DbOrTrx } from '../storage/db.js';
import type { AssumptionVersionRow } from '../storage/schema.js';
import type { AssumptionKind } from './kinds.js';

/** One value of an assumption from `effectiveFrom` (epoch ms; 0 = from the beginning) on. */
export interface AssumptionVersion {
  id: string;
  revision: number;
  kind: AssumptionKind;
  key: string;
  /** Minutes for baselines, micro-units for rates and credits; null = unset. */
  value: number | null;
  effectiveFrom: number;
  recordedAt: number;
  actorKeyId: string | null;
  reason: string | null;
  restatementId: string | null;
}

export function versionFromRow(row: AssumptionVersionRow): AssumptionVersion {
  return {
    id: row.id,
    revision: Number(row.revision),
    kind: row.kind as AssumptionKind,
    key: row.key,
    value: row.value === null ? null : Number(row.value),
    effectiveFrom: Number(row.effective_from),
    recordedAt: Number(row.recorded_at),
    actorKeyId: row.actor_key_id,
    reason: row.reason,
    restatementId: row.restatement_id,
  };
}

const slot = (kind: string, key: string) => `${kind}\n${key}`;

/**
 * An organisation's assumption versions as of `revision`. The value in force at an instant is
 * the version with the latest `effectiveFrom` at or before it; of versions with the same
 * `effectiveFrom`, the one recorded last. Immutable once built.
 */
export class AssumptionHistory {
  private readonly slots = new Map<string, AssumptionVersion[]>();
  /** Every distinct `effectiveFrom`, ascending: between two of them no value changes. */
  private readonly changes: number[];

  constructor(
    readonly orgId: string,
    readonly revision: number,
    readonly versions: readonly AssumptionVersion[],
  ) {
    for (const v of versions) {
      const s = slot(v.kind, v.key);
      const list = this.slots.get(s);
      if (list) list.push(v);
      else this.slots.set(s, [v]);
    }
    for (const list of this.slots.values()) {
      list.sort((a, b) => a.effectiveFrom - b.effectiveFrom || a.revision - b.revision);
    }
    this.changes = [...new Set(versions.map((v) => v.effectiveFrom))].sort((a, b) => a - b);
  }

  /**
   * How many changes of any value lie at or before `at`: two instants with the same epoch see
   * the same version of every assumption, so what is priced from them alone is the same.
   */
  epochOf(at: number): number {
    const { changes } = this;
    let lo = 0;
    let hi = changes.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((changes[mid] as number) <= at) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The version of (`kind`, `key`) in force at `at`; undefined when none applies yet. */
  at(kind: AssumptionKind, key: string, at: number): AssumptionVersion | undefined {
    const list = this.slots.get(slot(kind, key));
    if (!list) return undefined;
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((list[mid] as AssumptionVersion).effectiveFrom <= at) lo = mid + 1;
      else hi = mid;
    }
    return lo === 0 ? undefined : list[lo - 1];
  }

  /** The versions of (`kind`, `key`) by effective date, then by when they were recorded. */
  of(kind: AssumptionKind, key: string): readonly AssumptionVersion[] {
    return this.slots.get(slot(kind, key)) ?? [];
  }

  /** Whether (`kind`, `key`) has any version at all. */
  has(kind: AssumptionKind, key: string): boolean {
    return this.slots.has(slot(kind, key));
  }

  /** This history with `version` recorded after every other (a proposed change). */
  with(version: Omit<AssumptionVersion, 'revision'>): AssumptionHistory {
    return new AssumptionHistory(this.orgId, this.revision + 1, [
      ...this.versions,
      { ...version, revision: this.revision + 1 },
    ]);
  }
}

/** Reads an organisation's whole history (it has tens of versions, not thousands). */
export async function loadHistory(db: DbOrTrx, orgId: string): Promise<AssumptionHistory> {
  const rows = await db
    .selectFrom('assumption_versions')
    .selectAll()
    .where('org_id', '=', orgId)
    .orderBy('revision')
    .execute();
  const versions = rows.map(versionFromRow);
  const revision = versions.reduce((max, v) => Math.max(max, v.revision), 0);
  return new AssumptionHistory(orgId, revision, versions);
}

const cached = new Map<string, AssumptionHistory>();

/**
 * The history of `orgId` at `revision` (the organisation's `assumptions_revision`, read with its
 * API key on every request): kept per process and organisation and read again only when the
 * revision read differs, so tracking reads it once per change, not once per batch. A revision
 * comes from the database on every request, so a change made by another instance counts from
 * the next request, as with the rest of the organisation's settings.
 */
export async function historyFor(db: DbOrTrx, orgId: string, revision: number): Promise<AssumptionHistory> {
  const hit = cached.get(orgId);
  if (hit && hit.revision === revision) return hit;
  const loaded = await loadHistory(db, orgId);
  const current = cached.get(orgId);
  if (!current || current.revision <= loaded.revision) {
    if (cached.size >= 10_000) cached.clear();
    cached.set(orgId, loaded);
  }
  return loaded;
}
