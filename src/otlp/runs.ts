import { attribute, countAttribute, isTrue, stringAttribute, type ExportedSpan } from './spans.js';

const TASK_OPERATIONS = new Set(['invoke_agent', 'invoke_workflow']);
const MODEL_OPERATIONS = new Set(['chat', 'text_completion', 'generate_content', 'embeddings']);

/** A run's own span: a root `invoke_agent`/`invoke_workflow` span, or one marked for Tally. */
export function isTaskSpan(span: ExportedSpan): boolean {
  const a = span.attributes;
  if (stringAttribute(a, 'tally.task_type') !== undefined || isTrue(a, 'tally.task')) return true;
  const operation = attribute(a, 'gen_ai.operation.name');
  return typeof operation === 'string' && TASK_OPERATIONS.has(operation);
}

export function hasUsage(span: ExportedSpan): boolean {
  const a = span.attributes;
  return (
    countAttribute(a, 'gen_ai.usage.input_tokens') !== undefined ||
    countAttribute(a, 'gen_ai.usage.output_tokens') !== undefined ||
    countAttribute(a, 'gen_ai.usage.prompt_tokens') !== undefined ||
    countAttribute(a, 'gen_ai.usage.completion_tokens') !== undefined
  );
}

/**
 * A model call: its operation says so, or it names none and reports token usage (instrumentations
 * older than `gen_ai.operation.name`, such as Vercel's AI SDK 5, put usage on the call's span).
 */
export function isModelCall(span: ExportedSpan): boolean {
  const operation = attribute(span.attributes, 'gen_ai.operation.name');
  if (typeof operation === 'string') return MODEL_OPERATIONS.has(operation);
  return hasUsage(span) && !isTaskSpan(span);
}

/** The top of its process's part of the trace: no parent, or a parent in another process. */
export function isLocalRoot(span: ExportedSpan): boolean {
  return span.parentSpanId === '' || span.parentIsRemote === true;
}

/** One agent run: its task span and every GenAI span below it (the task span included). */
export interface Run {
  root: ExportedSpan;
  members: ExportedSpan[];
}

export interface TraceSplit {
  runs: Run[];
  /** GenAI spans settled but in no run (a model call outside any agent run). */
  outside: ExportedSpan[];
  /** GenAI spans that cannot be settled yet: to hold until their local root comes. */
  pending: ExportedSpan[];
}

/**
 * Some SDKs time a span's start with the wall clock in milliseconds and its end from a monotonic
 * clock (the JavaScript SDK does), so a child may seem to end up to a millisecond after its parent.
 */
const CLOCK_SLACK_US = 5_000;

const duration = (span: ExportedSpan) => span.endUs - span.startUs;

/**
 * Whether `outer` may be an ancestor of `inner` by their times: it covers it (within the slack)
 * and lasts longer, or as long with the smaller span id, so two spans never cover each other.
 */
function covers(outer: ExportedSpan, inner: ExportedSpan): boolean {
  if (outer === inner) return false;
  if (outer.startUs - CLOCK_SLACK_US > inner.startUs || inner.endUs > outer.endUs + CLOCK_SLACK_US)
    return false;
  const d = duration(outer) - duration(inner);
  return d > 0 || (d === 0 && outer.spanId < inner.spanId);
}

/**
 * Splits the spans of one trace (those of an export and those held) into runs.
 *
 * A span is settled when its run can be decided: when its parent chain leads to a local root of
 * its trace that has come (every span of a process's part of a trace ends before that part's
 * root, so nothing of it is still to come); or, where the chain passes through a span Tally never
 * kept (one without GenAI attributes is not held), when such a local root covers it in time; or
 * always when `settleAll` (the hold bound has passed). A settled span belongs to the run of the
 * nearest task span above it, by its parent chain, or where the chain breaks, by time: the
 * innermost task span covering it. The run is that task span's outermost such ancestor: an agent
 * invoked inside another agent's run is part of that run, not a task of its own.
 */
export function splitTrace(spans: ExportedSpan[], settleAll: boolean): TraceSplit {
  const byId = new Map<string, ExportedSpan>();
  for (const span of spans) if (!byId.has(span.spanId)) byId.set(span.spanId, span);
  const unique = [...byId.values()];
  const localRoots = unique.filter(isLocalRoot);

  /** Up the parent chain: the first span that `stop` accepts, 'broken' where a parent is missing, or null. */
  const climb = (span: ExportedSpan, stop: (s: ExportedSpan) => boolean): ExportedSpan | 'broken' | null => {
    let parentId = span.parentSpanId;
    // More steps than spans is a cycle a sender made up: nothing above, as at the top.
    for (let steps = 0; steps <= byId.size; steps++) {
      if (parentId === '') return null;
      const parent = byId.get(parentId);
      if (!parent) return 'broken';
      if (stop(parent)) return parent;
      parentId = parent.parentSpanId;
    }
    return null;
  };

  const isSettled = (span: ExportedSpan): boolean => {
    if (settleAll || isLocalRoot(span)) return true;
    const top = climb(span, isLocalRoot);
    if (top !== 'broken') return top !== null;
    return localRoots.some((root) => covers(root, span));
  };
  const settled = unique.filter((span) => span.genAi && isSettled(span));
  const settledSet = new Set(settled);
  const pending = unique.filter((span) => span.genAi && !settledSet.has(span));
  const tasks = settled.filter(isTaskSpan);
  const taskSet = new Set(tasks);
  const isTask = (span: ExportedSpan) => taskSet.has(span);

  /** The nearest task span above `span`, by parent chain, else by time; null at the top. */
  const taskAbove = (span: ExportedSpan): ExportedSpan | null => {
    const above = climb(span, isTask);
    if (above !== 'broken') return above;
    let best: ExportedSpan | null = null;
    for (const task of tasks) {
      if (covers(task, span) && (best === null || covers(best, task))) best = task;
    }
    return best;
  };

  const topOf = new Map<ExportedSpan, ExportedSpan>();
  const top = (task: ExportedSpan): ExportedSpan => {
    const known = topOf.get(task);
    if (known) return known;
    const path: ExportedSpan[] = [];
    let current = task;
    for (
      let above = taskAbove(current);
      above !== null && !path.includes(above);
      above = taskAbove(current)
    ) {
      path.push(current);
      current = above;
    }
    for (const step of [task, ...path]) topOf.set(step, current);
    return current;
  };

  const runs = new Map<ExportedSpan, Run>();
  const outside: ExportedSpan[] = [];
  for (const span of settled) {
    const owner = taskSet.has(span) ? top(span) : taskAbove(span);
    if (owner === null) {
      outside.push(span);
      continue;
    }
    const root = top(owner);
    const run = runs.get(root) ?? { root, members: [] };
    run.members.push(span);
    runs.set(root, run);
  }
  return { runs: [...runs.values()], outside, pending };
}
