import { randomBytes } from 'node:crypto';

/** Hand-made OTLP/JSON, for what an SDK would not send on purpose (and exact control). */
export type Attr = string | number | boolean;

export interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** Milliseconds since the epoch. */
  startMs: number;
  endMs: number;
  attributes?: Record<string, Attr>;
  status?: 0 | 1 | 2;
  events?: { name: string; attributes: Record<string, Attr> }[];
  flags?: number;
}

export const traceId = () => randomBytes(16).toString('hex');
export const spanId = () => randomBytes(8).toString('hex');

function value(v: Attr) {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
}

const attributes = (a: Record<string, Attr> = {}) =>
  Object.entries(a).map(([key, v]) => ({ key, value: value(v) }));
const nanos = (ms: number) => `${BigInt(Math.round(ms * 1000)) * 1000n}`;

/** An ExportTraceServiceRequest in OTLP/JSON with one resource. */
export function exportRequest(
  spans: JsonSpan[],
  resource: Record<string, Attr> = { 'service.name': 'hand-made' },
) {
  return {
    resourceSpans: [
      {
        resource: { attributes: attributes(resource) },
        scopeSpans: [
          {
            scope: { name: 'test' },
            spans: spans.map((s) => ({
              traceId: s.traceId,
              spanId: s.spanId,
              ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
              name: s.name,
              kind: 1,
              startTimeUnixNano: nanos(s.startMs),
              endTimeUnixNano: nanos(s.endMs),
              attributes: attributes(s.attributes),
              events: (s.events ?? []).map((e) => ({
                name: e.name,
                timeUnixNano: nanos(s.endMs),
                attributes: attributes(e.attributes),
              })),
              status: { code: s.status ?? 0 },
              ...(s.flags === undefined ? {} : { flags: s.flags }),
            })),
          },
        ],
      },
    ],
  };
}

/** An agent run: a root `invoke_agent` span and `chat` children with usage, ending at `endMs`. */
export function agentRun(options: {
  endMs: number;
  agent?: Record<string, Attr>;
  calls?: Record<string, Attr>[];
  trace?: string;
  parentSpanId?: string;
}): { root: JsonSpan; children: JsonSpan[]; all: JsonSpan[] } {
  const trace = options.trace ?? traceId();
  const start = options.endMs - 10_000;
  const root: JsonSpan = {
    traceId: trace,
    spanId: spanId(),
    ...(options.parentSpanId ? { parentSpanId: options.parentSpanId } : {}),
    name: 'invoke_agent',
    startMs: start,
    endMs: options.endMs,
    attributes: { 'gen_ai.operation.name': 'invoke_agent', ...options.agent },
  };
  const calls = options.calls ?? [
    {
      'gen_ai.request.model': 'gpt-4o',
      'gen_ai.provider.name': 'openai',
      'gen_ai.usage.input_tokens': 1000,
      'gen_ai.usage.output_tokens': 100,
    },
  ];
  const children = calls.map((attrs, i) => ({
    traceId: trace,
    spanId: spanId(),
    parentSpanId: root.spanId,
    name: 'chat',
    startMs: start + 1000 * (i + 1),
    endMs: start + 1000 * (i + 1) + 500,
    attributes: { 'gen_ai.operation.name': 'chat', ...attrs },
  }));
  return { root, children, all: [...children, root] };
}
