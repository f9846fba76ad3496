import type { OrgCtx } from '../context.js';
import { validationError } from '../errors.js';
import { newId } from '../ids.js';
import type { DbOrTrx } from '../storage/db.js';
import type { AssumptionVersion } from './history.js';
import type { AssumptionKind } from './kinds.js';

export interface AssumptionChange {
  kind: AssumptionKind;
  key: string;
  /** Stored units (minutes; micro-units for rates and credits); null = unset. */
  value: number | null;
  /** Epoch ms; 0 = from the beginning. */
  effectiveFrom: number;
  reason?: string | null;
  restatementId?: string | null;
}

/**
 * Records a version in the history. Call it in the transaction of the change: the organisation's
 * revision moves with it (row-locked on PostgreSQL, so concurrent changes number in turn), which
 * tells every process's copy of the history that it is out of date.
 */
export async function recordVersion(ctx: OrgCtx, change: AssumptionChange): Promise<AssumptionVersion> {
  const now = ctx.clock.now();
  const row = await ctx.db
    .updateTable('organizations')
    .set((eb) => ({ assumptions_revision: eb('assumptions_revision', '+', 1) }))
    .where('id', '=', ctx.org.id)
    .returning('assumptions_revision')
    .executeTakeFirstOrThrow();
  const version: AssumptionVersion = {
    id: newId('asv', now),
    revision: Number(row.assumptions_revision),
    kind: change.kind,
    key: change.key,
    value: change.value,
    effectiveFrom: change.effectiveFrom,
    recordedAt: now.getTime(),
    actorKeyId: ctx.actorKeyId,
    reason: change.reason ?? null,
    restatementId: change.restatementId ?? null,
  };
  await ctx.db
    .insertInto('assumption_versions')
    .values({
      id: version.id,
      org_id: ctx.org.id,
      revision: version.revision,
      kind: version.kind,
      key: version.key,
      value: version.value,
      effective_from: version.effectiveFrom,
      recorded_at: version.recordedAt,
      actor_key_id: version.actorKeyId,
      reason: version.reason,
      restatement_id: version.restatementId,
    })
    .execute();
  return version;
}

/**
 * The first versions of a new organisation (its default rate and outcome credits), from the
 * beginning, in its creating transaction.
 */
export async function seedOrganizationVersions(
  db: DbOrTrx,
  org: { id: string; defaultHourlyRateMicros: number; creditMicros: Record<string, number> },
  at: Date,
): Promise<void> {
  const values: Array<[AssumptionKind, string, number]> = [
    ['default_hourly_rate', '', org.defaultHourlyRateMicros],
    ...Object.entries(org.creditMicros).map(([o, v]): [AssumptionKind, string, number] => [
      'outcome_credit',
      o,
      v,
    ]),
  ];
  await db
    .insertInto('assumption_versions')
    .values(
      values.map(([kind, key, value], i) => ({
        id: newId('asv', at),
        org_id: org.id,
        revision: i + 1,
        kind,
        key,
        value,
        effective_from: 0,
        recorded_at: at.getTime(),
        actor_key_id: null,
        reason: null,
        restatement_id: null,
      })),
    )
    .execute();
  await db
    .updateTable('organizations')
    .set({ assumptions_revision: values.length })
    .where('id', '=', org.id)
    .execute();
}

/**
 * When a change applies from: an instant (RFC 3339 with a zone), or a UTC day `YYYY-MM-DD`
 * meaning its 00:00 UTC, except today's date, which means now; now when absent.
 */
export function effectiveFromOf(nowMs: number, text: string | undefined, path: string): number {
  const now = new Date(nowMs);
  if (text === undefined) return now.getTime();
  const day = /^\d{4}-\d{2}-\d{2}$/.test(text);
  // Today's date means from now on: a change effective today moves no stored figure.
  if (day && text === now.toISOString().slice(0, 10)) return now.getTime();
  const ms = Date.parse(day ? `${text}T00:00:00Z` : text);
  if (!Number.isFinite(ms) || (!day && !/(Z|[+-]\d{2}:\d{2})$/i.test(text))) {
    throw validationError(
      path,
      'must be an RFC 3339 timestamp with a time zone, or a date YYYY-MM-DD (00:00 UTC)',
    );
  }
  return ms;
}

/**
 * The ordinary routes change assumptions from now on only: a change with a past date would move
 * figures already stored, which is a restatement, previewed and applied on its own routes.
 */
export function refusePastDate(nowMs: number, effectiveFrom: number, path: string): void {
  if (effectiveFrom < nowMs) {
    throw validationError(
      path,
      'lies in the past: a change to past figures is a restatement; preview it with POST /v1/restatements/preview and apply it with POST /v1/restatements',
    );
  }
}
