import { findCustomTaskType } from '../catalogue/store.js';
import type { OrgCtx } from '../context.js';
import { validationError } from '../errors.js';
import {
  isAssumptionKind,
  KEY_OF,
  keyFits,
  NULLABLE_KINDS,
  storedValue,
  type AssumptionKind,
} from './kinds.js';
import { effectiveFromOf, type AssumptionChange } from './record.js';

/** A proposed change of one assumption, as the restatement routes take it (API units). */
export interface ChangeInput {
  kind: string;
  key?: string | null;
  value: number | null;
  effective_from: string;
}

const LIMITS: Record<AssumptionKind, [min: number, max: number, exclusiveMin: boolean]> = {
  baseline_override: [0, 525600, true],
  custom_baseline: [0, 525600, true],
  fallback_baseline: [0, 525600, true],
  default_hourly_rate: [0, 1_000_000, false],
  category_hourly_rate: [0, 1_000_000, false],
  custom_hourly_rate: [0, 1_000_000, false],
  outcome_credit: [0, 1, false],
};

/** Checks a proposed change against the organisation's catalogue; answers it in stored units. */
export async function checkChange(ctx: OrgCtx, input: ChangeInput): Promise<AssumptionChange> {
  const { kind } = input;
  if (!isAssumptionKind(kind)) throw validationError('/body/kind', 'is not a kind of assumption');
  const key = input.key ?? '';
  if (KEY_OF[kind] === 'none' && key !== '') {
    throw validationError('/body/key', `must be absent or null: ${kind} is the organisation's`);
  }
  if (KEY_OF[kind] !== 'none' && !keyFits(kind, key)) {
    throw validationError(
      '/body/key',
      `must name a ${KEY_OF[kind] === 'builtin' ? 'built-in task type' : KEY_OF[kind]}`,
    );
  }
  if (KEY_OF[kind] === 'custom' && !(await findCustomTaskType(ctx.db, ctx.org.id, key))) {
    throw validationError('/body/key', 'must name a custom task type of the organisation');
  }
  const { value } = input;
  if (value === null) {
    if (!NULLABLE_KINDS.has(kind)) throw validationError('/body/value', `cannot be null for ${kind}`);
  } else {
    const [min, max, exclusive] = LIMITS[kind];
    if (!Number.isFinite(value) || value > max || (exclusive ? value <= min : value < min)) {
      throw validationError(
        '/body/value',
        `must be ${exclusive ? 'over' : 'at least'} ${min} and at most ${max}`,
      );
    }
  }
  return {
    kind,
    key,
    value: storedValue(kind, value),
    effectiveFrom: effectiveFromOf(ctx.clock.now().getTime(), input.effective_from, '/body/effective_from'),
  };
}
