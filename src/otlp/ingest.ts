import type { OrgCtx } from '../context.js';
import { readDb, trackDb } from '../storage/db.js';
import { draftRun, type RunDraft } from './draft.js';
import { heldSpansOf, holdSpans, markTracesDone, releaseSpans } from './held.js';
import { loadRules } from './rule-store.js';
import { isLocalRoot, splitTrace } from './runs.js';
import type { ExportedSpan } from './spans.js';
import { trackRuns } from './track-runs.js';
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
  /** Spans of unresolved and rejected runs, and of traces over MAX_TRACE_SPANS. */
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

/**
 * Turns the spans of one export into tracked runs (docs/opentelemetry.md). Spans whose run
 * cannot be decided yet are held in the database; a trace whose local root is in the export is
 * settled with its held spans, and its runs are tracked through the tracking pipeline. Spans
 * without GenAI attributes are never written: they only tell which traces this export settles.
 */
export async function ingestSpans({
  ctx,
  spans,
}: {
  ctx: OrgCtx;
  spans: ExportedSpan[];
}): Promise<IngestResult> {
  const receivedAt = ctx.clock.now();
  const result: IngestResult = {
    genAiSpans: 0,
    heldSpans: 0,
    outsideSpans: 0,
    tracked: 0,
    replayed: 0,
    unresolved: 0,
    rejectedRuns: 0,
    rejectedSpans: 0,
    reasons: [],
  };
  const settling = new Map<string, ExportedSpan[]>();
  const toHold: ExportedSpan[] = [];
  for (const [traceId, list] of byTrace(spans)) {
    const genAi = list.filter((s) => s.genAi);
    result.genAiSpans += genAi.length;
    if (genAi.length > MAX_TRACE_SPANS) {
      result.rejectedSpans += genAi.length;
      result.reasons.push(
        `a trace sent more than ${MAX_TRACE_SPANS} GenAI spans at once; its spans were refused`,
      );
      continue;
    }
    if (list.some(isLocalRoot)) settling.set(traceId, list);
    else toHold.push(...genAi);
  }

  // Traces settled by this export, with what was held of them; the rules, read meanwhile, only
  // when a run may come of it.
  const mayRun = settling.size > 0 && spans.some((s) => s.genAi);
  const [held, rules] = await Promise.all([
    settling.size === 0
      ? new Map<string, ExportedSpan[]>()
      : heldSpansOf(readDb(ctx), ctx.org.id, [...settling.keys()]),
    mayRun ? loadRules(readDb(ctx), ctx.org.id) : null,
  ]);
  const drafts: RunDraft[] = [];
  const released: ExportedSpan[] = [];
  for (const [traceId, list] of settling) {
    const before: ExportedSpan[] = held.get(traceId) ?? [];
    if (before.length + list.length > MAX_TRACE_SPANS) {
      const refused = list.filter((s) => s.genAi).length;
      result.rejectedSpans += refused;
      result.reasons.push(`a trace has more than ${MAX_TRACE_SPANS} GenAI spans; its spans were refused`);
      continue;
    }
    const heldIds = new Set(before.map((s) => s.spanId));
    // A span sent again in this export is the export's: same span, same data.
    const fresh = list.filter((s) => !heldIds.has(s.spanId) || !s.genAi);
    const split = splitTrace([...before, ...fresh], false);
    for (const run of split.runs) {
      drafts.push(draftRun(run, ctx.org));
      released.push(...run.members.filter((s) => heldIds.has(s.spanId)));
    }
    result.outsideSpans += split.outside.length;
    released.push(...split.outside.filter((s) => heldIds.has(s.spanId)));
    toHold.push(...split.pending.filter((s) => !heldIds.has(s.spanId)));
  }

  result.heldSpans = toHold.length;
  const holding =
    toHold.length > 0 ? holdSpans(trackDb(ctx), ctx.org.id, receivedAt.getTime(), toHold) : null;
  if (drafts.length === 0) {
    await holding;
    if (released.length > 0) await releaseSpans(trackDb(ctx), ctx.org.id, released);
    return result;
  }
  // Held spans and runs are written side by side; the answer waits for both.
  const [outcomes] = await Promise.all([
    trackRuns({ ctx, drafts, rules: rules ?? (await loadRules(readDb(ctx), ctx.org.id)) }),
    holding,
  ]);
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
  // After the runs: a crash before these leaves the held spans, and the retried export settles
  // them again.
  await Promise.all([
    recordUnresolved(ctx.db, ctx.org.id, receivedAt, unresolved),
    done.size > 0 ? markTracesDone(trackDb(ctx), ctx.org.id, [...done], receivedAt.getTime()) : null,
    released.length > 0 ? releaseSpans(trackDb(ctx), ctx.org.id, released) : null,
  ]);
  return result;
}
