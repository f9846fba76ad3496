import { recordAudit } from '../audit/audit-log.js';
import type { OrgCtx } from '../context.js';
import { validationError } from '../errors.js';
import { newId } from '../ids.js';
import { checkChange, type ChangeInput } from './change-input.js';
import { columnValue, targetOf } from './changes.js';
import { syncCurrentValue } from './current.js';
import { loadHistory } from './history.js';
import { apiValue } from './kinds.js';
import { recordVersion } from './record.js';
import { repricerFor } from './reprice.js';
import { valueAt } from './resolve.js';
import { versionView, type AssumptionVersionView } from './view.js';

export interface RestatementInput extends ChangeInput {
  reason: string;
}

export interface RestatementView {
  id: string;
  reason: string;
  version: AssumptionVersionView;
}

/**
 * Applies a change whose effective date lies in the past: records the version (with the
 * restatement's id and reason) and today's value where it changes, with its audit row, in one
 * transaction; then the past figures follow (applyPastChange). A change from now on is not a
 * restatement and goes through the ordinary routes.
 */
export async function restate({
  ctx,
  input,
}: {
  ctx: OrgCtx;
  input: RestatementInput;
}): Promise<RestatementView> {
  const change = await checkChange(ctx, input);
  const now = ctx.clock.now().getTime();
  if (change.effectiveFrom >= now) {
    throw validationError(
      '/body/effective_from',
      'is not in the past: a change from now on changes no stored figure; make it with PATCH /v1/settings or the task type routes',
    );
  }
  const reason = input.reason.trim();
  if (reason.length === 0) throw validationError('/body/reason', 'must not be blank');
  const restatementId = newId('rst', new Date(now));
  const view = await ctx.db.transaction().execute(async (trx) => {
    const trxCtx = { ...ctx, db: trx };
    const before = valueAt(
      await loadHistory(trx, ctx.org.id),
      change.kind,
      change.key,
      change.effectiveFrom,
      columnValue(ctx.org, change.kind, change.key),
    );
    const version = await recordVersion(trxCtx, { ...change, reason, restatementId });
    const history = await loadHistory(trx, ctx.org.id);
    await syncCurrentValue(trxCtx, history, change.kind, change.key, now);
    await recordAudit(trxCtx, {
      action: 'assumption.restated',
      target: targetOf(change.kind, change.key),
      before: { value: apiValue(change.kind, before.value), version_id: before.id },
      after: {
        value: apiValue(change.kind, change.value),
        effective_from: new Date(change.effectiveFrom).toISOString(),
        version_id: version.id,
        restatement_id: restatementId,
      },
      reason,
    });
    return { id: restatementId, reason, version: versionView(history, version, now) };
  });
  await applyPastChange(ctx, { restatementId, orgId: ctx.org.id, reason });
  return view;
}

/**
 * Brings the stored figures in line with a restatement recorded in the history. The ledger
 * applies it: `applyRestatement(ctx, { restatementId, orgId, reason, reprice })` (src/ledger/)
 * writes, in bounded batches, an adjustment entry (signed deltas of hours, cost saved and net
 * saved, linked to the restatement) for every event whose figures `reprice` moves, and then the
 * `figures.restated` webhook is announced (announce.ts). Until the ledger is merged this only
 * builds the repricing function; no adjustment is written here.
 */
export async function applyPastChange(
  ctx: OrgCtx,
  restatement: { restatementId: string; orgId: string; reason: string },
): Promise<void> {
  const reprice = await repricerFor(ctx, restatement.orgId, null);
  // The ledger applies it: await applyRestatement(ctx, { ...restatement, reprice });
  void reprice;
}
