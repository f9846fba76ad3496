import { Type, type Static } from '@sinclair/typebox';
import { ErrorSchema, named, Nullable, Timestamp } from '../http/schemas.js';
import { RULE_FIELDS } from './rules.js';

const RuleKindSchema = Type.Union([Type.Literal('task_type'), Type.Literal('client_id')]);
const RuleFieldSchema = Type.Union(RULE_FIELDS.map((f) => Type.Literal(f)));
/** Attribute keys as OpenTelemetry writes them (`service.name`, `deployment.environment.name`…). */
const AttributeKey = Type.String({ minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]+$' });

export const MappingRuleBody = named(
  'OtlpMappingRuleRequest',
  Type.Object(
    {
      kind: RuleKindSchema,
      field: Type.Optional(RuleFieldSchema),
      attribute: Type.Optional(AttributeKey),
      value: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
      task_type: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    },
    {
      additionalProperties: false,
      description:
        'kind task_type: `field` (with `attribute` for resource_attribute), `value` and `task_type`. kind client_id: `attribute`, the resource attribute whose value is the client id.',
    },
  ),
);
export type MappingRuleBodyInput = Static<typeof MappingRuleBody>;

export const MappingRuleSchema = named(
  'OtlpMappingRule',
  Type.Object({
    id: Type.String(),
    kind: RuleKindSchema,
    field: RuleFieldSchema,
    attribute: Nullable(Type.String()),
    value: Nullable(Type.String()),
    task_type: Nullable(Type.String()),
    created_at: Timestamp,
  }),
);

export const MappingRuleListSchema = named(
  'OtlpMappingRuleList',
  Type.Object({ data: Type.Array(MappingRuleSchema, { description: 'In the order rules are tried' }) }),
);

export const CreatedMappingRuleSchema = named(
  'OtlpMappingRuleCreated',
  Type.Object({
    ...MappingRuleSchema.properties,
    resolved_runs: Type.Integer({
      description: 'Unresolved runs this rule (with the others) resolved and tracked now',
    }),
  }),
);

export const UnresolvedRunSchema = named(
  'OtlpUnresolvedRun',
  Type.Object({
    id: Type.String(),
    trace_id: Type.String(),
    span_id: Type.String(),
    agent_id: Type.String(),
    agent_name: Nullable(Type.String()),
    workflow_name: Nullable(Type.String()),
    span_name: Type.String(),
    service_name: Nullable(Type.String()),
    task_type: Nullable(
      Type.String({ description: "The span's tally.task_type, when Tally does not know it" }),
    ),
    reason: Type.String(),
    occurred_at: Timestamp,
    received_at: Timestamp,
  }),
);

export const UnresolvedRunListSchema = named(
  'OtlpUnresolvedRunList',
  Type.Object({ data: Type.Array(UnresolvedRunSchema), next_cursor: Nullable(Type.String()) }),
);

export const RetriedRunsSchema = named(
  'OtlpRetriedRuns',
  Type.Object({ resolved_runs: Type.Integer({ description: 'Unresolved runs tracked now' }) }),
);

/** OTLP/JSON ExportTraceServiceResponse (int64 as a string, as proto3 JSON writes it). */
export const ExportResponseJson = named(
  'OtlpExportTraceServiceResponse',
  Type.Object({
    partialSuccess: Type.Optional(
      Type.Object({
        rejectedSpans: Type.String({ pattern: '^[0-9]+$' }),
        errorMessage: Type.String(),
      }),
    ),
  }),
);

const Protobuf = (description: string) =>
  Type.String({ description, contentMediaType: 'application/x-protobuf' });

/** An answer of POST /v1/traces in the encoding of its request. */
const bothEncodings = (description: string, json: object, protobuf: string) => ({
  description,
  content: {
    'application/json': { schema: json },
    'application/x-protobuf': { schema: Protobuf(protobuf) },
  },
});

export const traceResponses = {
  200: bothEncodings(
    'Accepted; `partialSuccess` counts and explains the spans refused (not to be sent again)',
    ExportResponseJson,
    'opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse',
  ),
  '4xx': bothEncodings(
    'Refused; 429 is to be retried after Retry-After. A protobuf request gets a google.rpc.Status',
    ErrorSchema,
    'google.rpc.Status',
  ),
  '5xx': bothEncodings(
    '503 (retry after Retry-After) or an internal error. A protobuf request gets a google.rpc.Status',
    ErrorSchema,
    'google.rpc.Status',
  ),
};
