import { UNSTORABLE } from '../http/storable.js';

/** An attribute value as Tally reads it: only scalars are ever read (arrays and maps are dropped). */
export type AttributeValue = string | number | boolean;

/** Attributes by key, as a prototype-free object (keys come from the sender). */
export type Attributes = Record<string, AttributeValue>;

/**
 * One span as Tally keeps it, whichever encoding it came in. Only the attributes Tally reads
 * (READ_KEYS) are kept: a span's other attributes (prompts and completions among them) are never
 * converted, stored or held.
 */
export interface ExportedSpan {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  /** '' when the span has no parent. */
  parentSpanId: string;
  /** True when the span's parent lives in another process (OTLP span flags); null when unknown. */
  parentIsRemote: boolean | null;
  name: string;
  /** Microseconds since the epoch. */
  startUs: number;
  endUs: number;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  /** Whether the span carries any `gen_ai.*` or `tally.*` attribute. */
  genAi: boolean;
  attributes: Attributes;
  /** Its `gen_ai.evaluation.result` events' attributes (the only events Tally reads). */
  evaluations: Attributes[];
  /** The resource's scalar attributes; one object shared by the spans of one resource. */
  resource: Attributes;
}

/** Span attributes Tally reads (docs/opentelemetry.md, "Attributes read"). */
export const READ_KEYS = new Set([
  'gen_ai.operation.name',
  'gen_ai.agent.id',
  'gen_ai.agent.name',
  'gen_ai.workflow.name',
  'gen_ai.provider.name',
  'gen_ai.system',
  'gen_ai.request.model',
  'gen_ai.response.model',
  'gen_ai.usage.input_tokens',
  'gen_ai.usage.output_tokens',
  'gen_ai.usage.prompt_tokens',
  'gen_ai.usage.completion_tokens',
  'gen_ai.evaluation.name',
  'gen_ai.evaluation.score.label',
  'gen_ai.evaluation.score.value',
  'error.type',
  'tally.task',
  'tally.task_type',
  'tally.outcome',
  'tally.client_id',
]);

export const EVALUATION_EVENT = 'gen_ai.evaluation.result';

/** Resource attribute values longer than this are not kept (rules match short identifiers). */
export const MAX_RESOURCE_VALUE_LENGTH = 256;

export function isGenAiKey(key: string): boolean {
  return key.startsWith('gen_ai.') || key.startsWith('tally.');
}

export function emptyAttributes(): Attributes {
  return Object.create(null) as Attributes;
}

/** An attribute of `attributes`, never one of Object's prototype. */
export function attribute(attributes: Attributes, key: string): AttributeValue | undefined {
  return Object.hasOwn(attributes, key) ? attributes[key] : undefined;
}

export function stringAttribute(attributes: Attributes, key: string): string | undefined {
  const value = attribute(attributes, key);
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/** A token count: a whole number from 0 (numeric strings too: some SDKs send them so). */
export function countAttribute(attributes: Attributes, key: string): number | undefined {
  const value = attribute(attributes, key);
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

export function isTrue(attributes: Attributes, key: string): boolean {
  const value = attribute(attributes, key);
  return value === true || value === 'true';
}

const unstorable = (value: AttributeValue) => typeof value === 'string' && UNSTORABLE.test(value);

/** A string value neither engine can store as sent (http/storable.ts) among `attributes`. */
export function hasUnstorableValue(attributes: Attributes): boolean {
  for (const key in attributes)
    if (unstorable(attributes[key] as AttributeValue) || UNSTORABLE.test(key)) return true;
  return false;
}

/**
 * A span whose stored fields hold a string neither engine can store as sent: its name, or a
 * value of the attributes Tally keeps (agent, model, task type, client… become event columns
 * and metadata). Its resource is checked when decoded (decode.ts drops such values).
 */
export function unstorableSpan(span: ExportedSpan): boolean {
  return (
    UNSTORABLE.test(span.name) ||
    hasUnstorableValue(span.attributes) ||
    span.evaluations.some(hasUnstorableValue)
  );
}
