import type { AssumptionHistory, AssumptionVersion } from './history.js';
import { apiValue, type AssumptionKind } from './kinds.js';

export type VersionStatus = 'superseded' | 'in_force' | 'scheduled';

/** A version as the API shows it; `effective_from: null` = from the beginning. */
export interface AssumptionVersionView {
  id: string;
  kind: AssumptionKind;
  key: string | null;
  value: number | null;
  effective_from: string | null;
  recorded_at: string;
  actor_key_id: string | null;
  reason: string | null;
  restatement_id: string | null;
  status: VersionStatus;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function versionView(
  history: AssumptionHistory,
  v: AssumptionVersion,
  now: number,
): AssumptionVersionView {
  const status: VersionStatus =
    v.effectiveFrom > now
      ? 'scheduled'
      : history.at(v.kind, v.key, now)?.id === v.id
        ? 'in_force'
        : 'superseded';
  return {
    id: v.id,
    kind: v.kind,
    key: v.key === '' ? null : v.key,
    value: apiValue(v.kind, v.value),
    effective_from: v.effectiveFrom === 0 ? null : iso(v.effectiveFrom),
    recorded_at: iso(v.recordedAt),
    actor_key_id: v.actorKeyId,
    reason: v.reason,
    restatement_id: v.restatementId,
    status,
  };
}

/** The versions of the given slots, each slot by effective date then recording order. */
export function historyView(
  history: AssumptionHistory,
  slots: ReadonlyArray<[AssumptionKind, string]>,
  now: number,
): AssumptionVersionView[] {
  return slots.flatMap(([kind, key]) => history.of(kind, key).map((v) => versionView(history, v, now)));
}
