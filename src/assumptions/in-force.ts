import type { ServiceCtx } from '../context.js';
import { validationError } from '../errors.js';
import { loadHistory, type AssumptionVersion } from './history.js';

/**
 * The assumption versions in force at some time during a month (`YYYY-MM`, UTC): for each
 * assumption, the version in force at the month's start and every version that takes effect
 * before its end, by the history as it stands now. A closed month's statement records them.
 */
export async function versionsInForceDuring(
  ctx: Pick<ServiceCtx, 'db'>,
  orgId: string,
  month: string,
): Promise<AssumptionVersion[]> {
  const match = /^(\d{4})-(\d{2})$/.exec(month);
  const m = match ? Number(match[2]) : 0;
  if (!match || m < 1 || m > 12) throw validationError('/month', 'must be YYYY-MM');
  const start = Date.UTC(Number(match[1]), m - 1, 1);
  const end = Date.UTC(Number(match[1]), m, 1);
  const history = await loadHistory(ctx.db, orgId);
  const slots = new Set(history.versions.map((v) => `${v.kind}\n${v.key}`));
  const out: AssumptionVersion[] = [];
  for (const slot of slots) {
    const [kind, key] = slot.split('\n') as [AssumptionVersion['kind'], string];
    const atStart = history.at(kind, key, start);
    const during = history.of(kind, key).filter((v) => v.effectiveFrom > start && v.effectiveFrom < end);
    // Of versions with one date, only the last recorded applies.
    const applying = during.filter((v, i) => during[i + 1]?.effectiveFrom !== v.effectiveFrom);
    if (atStart) out.push(atStart);
    out.push(...applying);
  }
  return out.sort((a, b) => a.revision - b.revision);
}
