import { requireRole } from '../accounts/authorize.js';
import { recordAudit } from '../audit/audit-log.js';
import type { OrgCtx, ServiceCtx } from '../context.js';
import { notFound, validationError } from '../errors.js';
import {
  abandonRestatement,
  applyRestatement,
  openRestatement,
  readRestatement,
  removeLeftoverStaging,
  restatementView,
  RESTATEMENT_BATCH,
  type ApplyOptions,
} from '../ledger/restatement.js';
import { getOrganization } from '../orgs/organization-record.js';
import { newId } from '../ids.js';
import { checkChange, type ChangeInput } from './change-input.js';
import { columnValue, targetOf } from './changes.js';
import { syncCurrentValue } from './current.js';
import { loadHistory } from './history.js';
import { apiValue } from './kinds.js';
import { recordVersion } from './record.js';
import { inScope } from './preview.js';
import { ledgerRepricerOf, loadAssumptions } from './reprice.js';
import { valueAt } from './resolve.js';
import { versionView, type AssumptionVersionView } from './view.js';

export interface RestatementInput extends ChangeInput {
  reason: string;
}

export interface RestatementView extends ReturnType<typeof restatementView> {
  /** The version the restatement recorded. */
  version: AssumptionVersionView;
}

/**
 * A restatement is applied within the request when the organisation has at most this many
 * events (one staging batch); otherwise it is answered `staging` and applied in the background.
 */
export const INLINE_RESTATEMENT_EVENTS = RESTATEMENT_BATCH;

/**
 * Tests: the ledger's batch size and hooks; `wait` applies within the call whatever the size,
 * `inline` replaces INLINE_RESTATEMENT_EVENTS.
 */
export type ApplyHooks = Pick<ApplyOptions, 'batch' | 'afterBatch' | 'beforePublish'> & {
  wait?: boolean;
  inline?: number;
};

/**
 * Applies a change whose effective date lies in the past (docs/assumptions.md "Restatements").
 * One transaction records the version (with the restatement's id and reason), today's value where
 * it changes, the audit entry `assumption.restated`, and the restatement itself as `staging`: from
 * then on a restarted service finishes it. Then the ledger applies it (applyPastChange): within
 * the call for a small organisation, else in the background, the answer saying `staging`.
 */
export async function restate({
  ctx,
  input,
  hooks = {},
  onBackgroundError = () => undefined,
}: {
  ctx: OrgCtx;
  input: RestatementInput;
  hooks?: ApplyHooks;
  onBackgroundError?: (error: unknown) => void;
}): Promise<RestatementView> {
  requireRole(ctx, 'admin');
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
  await ctx.db.transaction().execute(async (trx) => {
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
    await openRestatement(trx, { id: restatementId, orgId: ctx.org.id, reason, at: new Date(now) });
  });
  const restatement = { restatementId, orgId: ctx.org.id, reason };
  const inline = hooks.inline ?? INLINE_RESTATEMENT_EVENTS;
  const few = await ctx.db
    .selectFrom('events')
    .select('id')
    .where('org_id', '=', ctx.org.id)
    .limit(inline + 1)
    .execute();
  if (hooks.wait === true || few.length <= inline) await applyPastChange(ctx, restatement, hooks);
  else void applyInBackground(ctx, restatement, onBackgroundError, hooks);
  return getRestatement({ ctx, id: restatementId });
}

/** A restatement of the organisation with the version it recorded (GET /v1/restatements/{id}). */
export async function getRestatement({ ctx, id }: { ctx: OrgCtx; id: string }): Promise<RestatementView> {
  const row = await readRestatement(ctx.db, ctx.org.id, id);
  const history = await loadHistory(ctx.db, ctx.org.id);
  const version = history.versions.find((v) => v.restatementId === id);
  if (version === undefined) throw notFound(`Restatement ${id}`);
  return { ...restatementView(row), version: versionView(history, version, ctx.clock.now().getTime()) };
}

/**
 * Brings the stored figures in line with a restatement recorded in the history: the ledger's
 * applyRestatement walks the organisation's events in bounded batches, stages an adjustment for
 * every event of the change's scope whose figures the history as stored now moves (from its
 * current figures, a review kept), and publishes them at once with the audit entry
 * `figures.restated` and the one `figures.restated` webhook message. Resumes a restatement left
 * `staging`; answers an applied one as it is.
 */
export async function applyPastChange(
  ctx: OrgCtx,
  restatement: { restatementId: string; orgId: string; reason: string },
  hooks: ApplyHooks = {},
): Promise<void> {
  const assumptions = await loadAssumptions(ctx, restatement.orgId, null);
  const version = assumptions.history.versions.find((v) => v.restatementId === restatement.restatementId);
  if (version === undefined) throw notFound(`Restatement ${restatement.restatementId}`);
  const scope = inScope(assumptions, version);
  const reprice = ledgerRepricerOf(assumptions);
  const { wait: _wait, inline: _inline, ...ledgerHooks } = hooks;
  await applyRestatement(ctx, {
    ...restatement,
    ...ledgerHooks,
    reprice: (event, current) => (scope(event) ? reprice(event, current) : null),
    change: versionView(assumptions.history, version, ctx.clock.now().getTime()),
  });
}

/** Restatements being applied by this process, so that it applies each once at a time. */
const running = new Map<string, Promise<void>>();

function applyInBackground(
  ctx: OrgCtx,
  restatement: { restatementId: string; orgId: string; reason: string },
  onError: (error: unknown) => void,
  hooks: ApplyHooks = {},
): Promise<void> {
  const held = running.get(restatement.restatementId);
  if (held) return held;
  const run = applyPastChange(ctx, restatement, hooks)
    .catch(onError)
    .finally(() => running.delete(restatement.restatementId));
  running.set(restatement.restatementId, run);
  return run;
}

/**
 * Finishes every restatement left `staging` (a service stopped while applying it): one the
 * assumptions recorded is applied from its cursor; one without a version (the ledger's alone)
 * cannot be repriced and is abandoned, its staged entries removed. Then removes the staged rows
 * left by restatements applied or abandoned meanwhile (a process stopped before it removed them).
 * Run at start and every minute by RestatementSweeper; returns the restatements' ids and what
 * became of them.
 */
export async function finishRestatements(
  ctx: ServiceCtx,
  onError: (error: unknown) => void = () => undefined,
): Promise<Array<{ id: string; status: string }>> {
  const pending = await ctx.db
    .selectFrom('restatements')
    .select(['id', 'org_id', 'reason'])
    .where('status', '=', 'staging')
    .orderBy('created_at')
    .execute();
  const out = [];
  for (const r of pending) {
    const held = running.get(r.id);
    if (held) {
      await held;
      out.push({ id: r.id, status: (await readRestatement(ctx.db, r.org_id, r.id)).status });
      continue;
    }
    const org = await getOrganization({ ctx, id: r.org_id });
    const orgCtx: OrgCtx = { ...ctx, org, actorKeyId: null };
    const named = await ctx.db
      .selectFrom('assumption_versions')
      .select('id')
      .where('org_id', '=', r.org_id)
      .where('restatement_id', '=', r.id)
      .executeTakeFirst();
    if (named === undefined) await abandonRestatement(orgCtx, r.id);
    else await applyInBackground(orgCtx, { restatementId: r.id, orgId: r.org_id, reason: r.reason }, onError);
    out.push({ id: r.id, status: (await readRestatement(ctx.db, r.org_id, r.id)).status });
  }
  await removeLeftoverStaging(ctx.db);
  return out;
}

/** Finishes the restatements left `staging`, at start and then every minute (worker processes). */
export class RestatementSweeper {
  private timer: NodeJS.Timeout | null = null;
  private pass: Promise<unknown> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly ctx: ServiceCtx,
    private readonly options: { onError: (error: unknown) => void; intervalMs?: number },
  ) {}

  start(): void {
    const run = () => {
      if (this.stopped) return;
      this.pass = finishRestatements(this.ctx, this.options.onError)
        .catch(this.options.onError)
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(run, this.options.intervalMs ?? 60_000);
        });
    };
    run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    // A restatement still being applied is left `staging`: the next start finishes it.
    await this.pass;
  }
}
