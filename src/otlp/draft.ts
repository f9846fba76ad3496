import type { Organization, Outcome } from '../orgs/organizations.js';
import { priceRun } from '../pricing/price-run.js';
import type { TrackInput } from '../tracking/track-input.js';
import { fromMicros } from '../money.js';
import { hasUsage, isModelCall, type Run } from './runs.js';
import { attribute, countAttribute, stringAttribute, type Attributes, type ExportedSpan } from './spans.js';
import type { RunFacts } from './rules.js';

/** A run ready to track but for its task type, which a mapping rule may still give. */
export interface RunDraft {
  traceId: string;
  spanId: string;
  /** The GenAI spans of the run (answered as rejected when the run is). */
  spanCount: number;
  facts: RunFacts;
  /** `tally.task_type` of the task span, if any. */
  taskType: string | null;
  /** The track body without its task type; its client only from `tally.client_id`. */
  input: Omit<TrackInput, 'task_type'>;
}

const OUTCOMES = new Set<Outcome>(['success', 'failure', 'needs_review']);

/**
 * Labels of a `gen_ai.evaluation.result` that mean the output failed its evaluation (the
 * conventions' examples, and their usual spellings); a run with one needs review.
 */
export const FAILED_EVALUATION_LABELS = new Set([
  'fail',
  'failed',
  'failure',
  'incorrect',
  'not_relevant',
  'irrelevant',
  'false',
  'no',
  'bad',
  'unsafe',
  'rejected',
]);

function failedEvaluation(evaluation: Attributes): boolean {
  // An evaluation that errored says nothing about the run.
  if (attribute(evaluation, 'error.type') !== undefined) return false;
  const label = stringAttribute(evaluation, 'gen_ai.evaluation.score.label');
  return label !== undefined && FAILED_EVALUATION_LABELS.has(label.trim().toLowerCase());
}

function outcomeOf(run: Run): Outcome {
  const { root } = run;
  const explicit = stringAttribute(root.attributes, 'tally.outcome');
  if (explicit !== undefined && OUTCOMES.has(explicit as Outcome)) return explicit as Outcome;
  if (root.statusCode === 2 || attribute(root.attributes, 'error.type') !== undefined) return 'failure';
  const evaluated = run.members.some(
    (span) =>
      span.evaluations.some(failedEvaluation) ||
      (attribute(span.attributes, 'gen_ai.evaluation.score.label') !== undefined &&
        failedEvaluation(span.attributes)),
  );
  return evaluated ? 'needs_review' : 'success';
}

function tokensOf(span: ExportedSpan): { in: number; out: number } {
  const a = span.attributes;
  return {
    in:
      countAttribute(a, 'gen_ai.usage.input_tokens') ?? countAttribute(a, 'gen_ai.usage.prompt_tokens') ?? 0,
    out:
      countAttribute(a, 'gen_ai.usage.output_tokens') ??
      countAttribute(a, 'gen_ai.usage.completion_tokens') ??
      0,
  };
}

interface ModelUsage {
  provider: string | null;
  model: string | null;
  tokensIn: number;
  tokensOut: number;
}

/**
 * The run's usage by model, from its model-call spans. A model call that contains another one
 * (a wrapper reporting its children's total) is skipped, and so is the task span's own usage:
 * agent spans often repeat the sum of their calls. Only a run without model calls that report
 * usage falls back to what its task span reports.
 */
function usageOf(run: Run): ModelUsage[] {
  const calls = run.members.filter((span) => span !== run.root && isModelCall(span) && hasUsage(span));
  const wrappers = new Set<ExportedSpan>();
  if (calls.length > 1) {
    const byId = new Map(run.members.map((span) => [span.spanId, span]));
    const callSet = new Set(calls);
    for (const call of calls) {
      // Bounded by the run's size: a parent chain a sender made circular ends too.
      let p = byId.get(call.parentSpanId);
      for (let steps = 0; p && steps < run.members.length; steps++, p = byId.get(p.parentSpanId)) {
        if (callSet.has(p)) wrappers.add(p);
      }
    }
  }
  const counted = calls.filter((call) => !wrappers.has(call));
  const sources = counted.length > 0 ? counted : hasUsage(run.root) ? [run.root] : [];
  const byModel = new Map<string, ModelUsage>();
  for (const span of sources) {
    const a = span.attributes;
    const model =
      stringAttribute(a, 'gen_ai.response.model') ?? stringAttribute(a, 'gen_ai.request.model') ?? null;
    const provider =
      stringAttribute(a, 'gen_ai.provider.name') ?? stringAttribute(a, 'gen_ai.system') ?? null;
    const key = `${provider ?? ''}\n${model ?? ''}`;
    const usage = byModel.get(key) ?? { provider, model, tokensIn: 0, tokensOut: 0 };
    const tokens = tokensOf(span);
    usage.tokensIn += tokens.in;
    usage.tokensOut += tokens.out;
    byModel.set(key, usage);
  }
  return [...byModel.values()];
}

/**
 * The model name the pricing catalogue knows: `provider/model` when the provider is one of the
 * catalogue's (a conventions name like `openai`, or an SDK's like `openai.chat` by its first
 * part), else the model name alone, which the catalogue matches across providers.
 */
export function catalogueModel(usage: ModelUsage, org: Organization, at: Date): string | null {
  if (usage.model === null) return null;
  const key = `${usage.provider ?? ''}\n${usage.model}\n${org.currency}`;
  const known = catalogueModels.get(key);
  if (known !== undefined) return known;
  const found = findCatalogueModel(usage.model, usage.provider, org, at);
  // Bounded like the pricing catalogue's own cache: names come from senders.
  if (catalogueModels.size >= MAX_CACHED_MODELS) catalogueModels.clear();
  catalogueModels.set(key, found);
  return found;
}

const MAX_CACHED_MODELS = 5_000;
const catalogueModels = new Map<string, string>();

function findCatalogueModel(model: string, provider: string | null, org: Organization, at: Date): string {
  const candidates = [model];
  if (provider !== null) {
    const short = provider.split('.')[0] ?? provider;
    candidates.unshift(...new Set([`${short}/${model}`, `${provider}/${model}`]));
  }
  for (const candidate of candidates) {
    const priced = priceRun({
      model: candidate,
      tokensIn: 0,
      tokensOut: 0,
      at,
      currency: org.currency,
      usdExchangeRate: org.usdExchangeRate,
    });
    if (priced) return candidate;
  }
  return model;
}

/** Model, tokens and (for a run over several models) cost, as a track body carries them. */
function costFields(run: Run, org: Organization, at: Date): Partial<TrackInput> & { models?: unknown[] } {
  const usage = usageOf(run);
  if (usage.length === 0) return {};
  const tokensIn = usage.reduce((n, u) => n + u.tokensIn, 0);
  const tokensOut = usage.reduce((n, u) => n + u.tokensOut, 0);
  const first = usage[0];
  if (usage.length === 1 && first) {
    // One model: priced by the tracking pipeline itself, as POST /v1/track prices it.
    const model = catalogueModel(first, org, at);
    return { ...(model === null ? {} : { model }), tokens_in: tokensIn, tokens_out: tokensOut };
  }
  // Several models: each priced on its own with the same catalogue; the event carries their sum
  // as its cost (one model field cannot price them) and the breakdown in its metadata.
  const dominant = [...usage].sort((a, b) => b.tokensIn + b.tokensOut - (a.tokensIn + a.tokensOut))[0];
  let micros: number | null = 0;
  const models = usage.map((u) => {
    const model = catalogueModel(u, org, at);
    const priced =
      model === null
        ? null
        : priceRun({
            model,
            tokensIn: u.tokensIn,
            tokensOut: u.tokensOut,
            at,
            currency: org.currency,
            usdExchangeRate: org.usdExchangeRate,
          });
    if (priced === null) micros = null;
    else if (micros !== null) micros += priced.agentCostMicros;
    return {
      model: model ?? u.model,
      tokens_in: u.tokensIn,
      tokens_out: u.tokensOut,
      agent_cost: priced === null ? null : fromMicros(priced.agentCostMicros),
    };
  });
  const dominantModel = dominant ? catalogueModel(dominant, org, at) : null;
  return {
    ...(micros === null ? {} : { agent_cost: fromMicros(micros) }),
    // Without a cost for every model, a model beside the sum of tokens would price them all as it.
    ...(micros !== null && dominantModel !== null ? { model: dominantModel } : {}),
    tokens_in: tokensIn,
    tokens_out: tokensOut,
    models,
  };
}

/** The track body of a run (but its task type), and what mapping rules match on. */
export function draftRun(run: Run, org: Organization): RunDraft {
  const { root } = run;
  const a = root.attributes;
  const occurredAt = new Date(Math.floor(root.endUs / 1000));
  const agentId =
    stringAttribute(a, 'gen_ai.agent.id') ??
    stringAttribute(a, 'gen_ai.agent.name') ??
    stringAttribute(root.resource, 'service.name') ??
    '';
  const { models, ...cost } = costFields(run, org, occurredAt);
  const clientId = stringAttribute(a, 'tally.client_id');
  const metadata: Record<string, unknown> = {
    ...(clientId === undefined ? {} : { client_id: clientId }),
    otel_trace_id: root.traceId,
    otel_span_id: root.spanId,
    ...(models === undefined ? {} : { otel_models: models }),
  };
  return {
    traceId: root.traceId,
    spanId: root.spanId,
    spanCount: run.members.length,
    facts: {
      agent_name: stringAttribute(a, 'gen_ai.agent.name') ?? null,
      workflow_name: stringAttribute(a, 'gen_ai.workflow.name') ?? null,
      span_name: root.name,
      resource: root.resource,
    },
    taskType: stringAttribute(a, 'tally.task_type') ?? null,
    input: {
      agent_id: agentId,
      outcome: outcomeOf(run),
      agent_duration_seconds: Math.max(0, root.endUs - root.startUs) / 1e6,
      ...cost,
      metadata,
      occurred_at: occurredAt.toISOString(),
    },
  };
}
