import type { OrgCtx } from '../context.js';
import { inTransaction, trackDb, type DbOrTrx } from '../storage/db.js';
import { announceCommitted } from '../tracking/track.js';
import { draftRun, type RunDraft } from './draft.js';
import { heldSpansOf, holdSpans, markTracesDone, releaseSpans } from './held.js';
import { cachedRules } from './rule-store.js';
import type { MappingRule } from './rules.js';
import { isLocalRoot, splitTrace } from './runs.js';
import { unstorableSpan, type ExportedSpan } from './spans.js';
import { lockTraces, traceQueueOf, withRetries } from './trace-locks.js';
import { trackRunsIn, type RunOutcome } from './track-runs.js';
import { recordUnresolved } from './unresolved.js';

/** GenAI spans one trace may have at once (an export's and the held): bounds the work of one run. */
export const MAX_TRACE_SPANS = 5_000;

export interface IngestResult {
  /** GenAI spans received; the others were only read for the shape of their traces. */
  genAiSpans: number;
  /** GenAI spans held until their run can be decided. */
  heldSpans: number;
  /** GenAI spans settled outside any run (a model call without an agent run around it). */
  outsideSpans: number;
  tracked: number;
  replayed: number;
  unresolved: number;
  rejectedRuns: number;
  /** Spans of unresolved and rejected runs, of traces over MAX_TRACE_SPANS, and unstorable spans. */
  rejectedSpans: number;
  /** Why, one line per reason, for partial_success.error_message. */
  reasons: string[];
}

function byTrace(spans: ExportedSpan[]): Map<string, ExportedSpan[]> {
  const map = new Map<string, ExportedSpan[]>();
  for (const span of spans) {
    const list = map.get(span.traceId);
    if (list) list.push(span);
    else map.set(span.traceId, [span]);
  }
  return map;
}

/** `counts` as "3 runs …; 1 run …" lines, one per reason. */
function reasonLines(counts: Map<string, number>): string[] {
  return [...counts].map(([reason, n]) => `${n} ${n === 1 ? 'run' : 'runs'} ${reason}`);
}

const emptyResult = (): IngestResult => ({
  genAiSpans: 0,
  heldSpans: 0,
  outsideSpans: 0,
  tracked: 0,
  replayed: 0,
  unresolved: 0,
  rejectedRuns: 0,
  rejectedSpans: 0,
  reasons: [],
});

/** What an export's transaction decided: its counts, and the runs to keep as unresolved. */
interface Settled {
  result: IngestResult;
  unresolved: { draft: RunDraft; reason: string }[];
}

/**
 * The export's work on its traces, in the transaction `trx` that holds their locks: the spans
 * held before are read, the traces with their local root are split into runs, which are tracked,
 * and the spans still pending are held; a run's held spans are released and its trace marked
 * done. Another export of one of these traces, on any instance, comes wholly before or after.
 */
async function settleInTransaction(
  trx: DbOrTrx,
  ctx: OrgCtx,
  receivedAt: Date,
  base: IngestResult,
  settling: Map<string, ExportedSpan[]>,
  pendingSpans: ExportedSpan[],
  rules: MappingRule[],
): Promise<Settled> {
  const result: IngestResult = { ...base, reasons: [...base.reasons] };
  const held =
    settling.size === 0
      ? new Map<string, ExportedSpan[]>()
      : await heldSpansOf(trx, ctx.org.id, [...settling.keys()]);
  const toHold = [...pendingSpans];
  const drafts: RunDraft[] = [];
  const released: ExportedSpan[] = [];
  for (const [traceId, list] of settling) {
    const before: ExportedSpan[] = held.get(traceId) ?? [];
    if (before.length + list.length > MAX_TRACE_SPANS) {
      result.rejectedSpans += list.filter((s) => s.genAi).length;
      result.reasons.push(`a trace has more than ${MAX_TRACE_SPANS} GenAI spans; its spans were refused`);
      continue;
    }
    const heldIds = new Set(before.map((s) => s.spanId));
    // A span sent again in this export is the export's: same span, same data.
    const fresh = before.length === 0 ? list : list.filter((s) => !heldIds.has(s.spanId) || !s.genAi);
    const split = splitTrace(before.length === 0 ? list : [...before, ...fresh], false);
    for (const run of split.runs) {
      drafts.push(draftRun(run, ctx.org));
      if (heldIds.size > 0) released.push(...run.members.filter((s) => heldIds.has(s.spanId)));
    }
    result.outsideSpans += split.outside.length;
    if (heldIds.size > 0) released.push(...split.outside.filter((s) => heldIds.has(s.spanId)));
    toHold.push(...split.pending.filter((s) => !heldIds.has(s.spanId)));
  }

  result.heldSpans = toHold.length;
  if (toHold.length > 0) await holdSpans(trx, ctx.org.id, receivedAt.getTime(), toHold);
  const outcomes: RunOutcome[] = drafts.length === 0 ? [] : await trackRunsIn(trx, { ctx, drafts, rules });
  const unresolved: { draft: RunDraft; reason: string }[] = [];
  const refused = new Map<string, number>();
  const done = new Set<string>();
  drafts.forEach((draft, i) => {
    const outcome = outcomes[i];
    if (outcome?.kind === 'tracked') {
      if (outcome.replayed) result.replayed++;
      else result.tracked++;
      done.add(draft.traceId);
      return;
    }
    if (!outcome) return;
    result.rejectedSpans += draft.spanCount;
    const reason = outcome.kind === 'unresolved' ? outcome.reason : outcome.message;
    refused.set(reason, (refused.get(reason) ?? 0) + 1);
    if (outcome.kind === 'unresolved') {
      result.unresolved++;
      unresolved.push({ draft, reason });
    } else result.rejectedRuns++;
  });
  result.reasons.push(...reasonLines(refused));
  if (done.size > 0) await markTracesDone(trx, ctx.org.id, [...done], receivedAt.getTime());
  if (released.length > 0) await releaseSpans(trx, ctx.org.id, released);
  // PostgreSQL: in the same transaction. SQLite keeps these in the main file, which the export's
  // connection (the events file's writer) does not write: the caller records them after its commit.
  if (ctx.engine === 'postgres') await recordUnresolved(trx, ctx.org.id, receivedAt, unresolved);
  return { result, unresolved };
}

/**
 * Turns the spans of one export into tracked runs (docs/opentelemetry.md). Spans whose run
 * cannot be decided yet are held in the database; a trace whose local root is in the export is
 * settled with its held spans, and its runs are tracked through the tracking pipeline. Spans
 * without GenAI attributes are never written: they only tell which traces this export settles.
 * All of it is one transaction that holds the locks of the export's traces.
 */
export async function ingestSpans({
  ctx,
  spans,
}: {
  ctx: OrgCtx;
  spans: ExportedSpan[];
}): Promise<IngestResult> {
  const receivedAt = ctx.clock.now();
  const base = emptyResult();
  const settling = new Map<string, ExportedSpan[]>();
  const toHold: ExportedSpan[] = [];
  const holding = new Set<string>();
  let unstorable = 0;
  for (const [traceId, all] of byTrace(spans)) {
    let list = all;
    let genAi = list.filter((s) => s.genAi);
    base.genAiSpans += genAi.length;
    // Refused alone: a span whose stored fields neither engine can hold as sent.
    const refused = genAi.filter(unstorableSpan);
    if (refused.length > 0) {
      unstorable += refused.length;
      list = list.filter((s) => !refused.includes(s));
      genAi = genAi.filter((s) => !refused.includes(s));
    }
    if (genAi.length > MAX_TRACE_SPANS) {
      base.rejectedSpans += genAi.length;
      base.reasons.push(
        `a trace sent more than ${MAX_TRACE_SPANS} GenAI spans at once; its spans were refused`,
      );
      continue;
    }
    if (list.some(isLocalRoot)) settling.set(traceId, list);
    else if (genAi.length > 0) {
      toHold.push(...genAi);
      holding.add(traceId);
    }
  }
  if (unstorable > 0) {
    base.rejectedSpans += unstorable;
    base.reasons.push(
      `${unstorable} ${unstorable === 1 ? 'span has' : 'spans have'} NUL characters or unpaired UTF-16 surrogates in their name or attributes`,
    );
  }
  const traces = [...settling.keys(), ...holding];
  if (traces.length === 0) return base;

  // Read before the transaction: on a SQLite database in one file (in memory) the transaction
  // holds its only connection.
  const rules = settling.size > 0 ? await cachedRules(ctx) : [];
  const release = await traceQueueOf(ctx.db).acquire(traces.map((t) => `${ctx.org.id}:${t}`));
  let settled: Settled;
  try {
    settled = await withRetries(() =>
      inTransaction(trackDb(ctx), async (trx) => {
        await lockTraces(trx, ctx.engine, ctx.org.id, traces);
        return settleInTransaction(trx, ctx, receivedAt, base, settling, toHold, rules);
      }),
    );
  } finally {
    release();
  }
  if (ctx.engine !== 'postgres') await recordUnresolved(ctx.db, ctx.org.id, receivedAt, settled.unresolved);
  // Whoever derives from the events (the folding stage) hears of them as from any track call.
  if (settled.result.tracked > 0) await announceCommitted(ctx);
  return settled.result;
}
