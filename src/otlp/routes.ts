import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { AppError, ERROR_STATUS } from '../errors.js';
import { orgCtx } from '../http/app-types.js';
import { consumeRate } from '../http/auth.js';
import { handleError, toAppError } from '../http/errors.js';
import { described, errorResponses, ListQueryFields } from '../http/schemas.js';
import {
  isProtobufRequest,
  JSON_TYPE,
  OTLP_BODY_LIMIT_BYTES,
  OtlpBody,
  PROTOBUF,
  registerOtlpBodyParsers,
} from './body.js';
import { ingestSpans } from './ingest.js';
import { createMappingRule, deleteMappingRule, listMappingRules } from './mappings.js';
import { registerOtlpMetrics, type OtlpMetrics } from './metrics.js';
import { encodeExportResponse, encodeRpcStatus } from './proto.js';
import { isTaskSpan } from './runs.js';
import {
  CreatedMappingRuleSchema,
  MappingRuleBody,
  MappingRuleListSchema,
  RetriedRunsSchema,
  traceResponses,
  UnresolvedRunListSchema,
} from './schema.js';
import { dismissUnresolvedRun, listUnresolvedRuns, retryUnresolvedRuns } from './unresolved.js';

/** partial_success.error_message stays short: exporters log it. */
const MAX_ERROR_MESSAGE = 1000;

/** gRPC status codes of google.rpc.Status, by HTTP status (OTLP/HTTP answers protobuf errors so). */
function grpcCode(status: number): number {
  if (status === 401) return 16; // UNAUTHENTICATED
  if (status === 403) return 7; // PERMISSION_DENIED
  if (status === 404) return 5; // NOT_FOUND
  if (status === 429) return 8; // RESOURCE_EXHAUSTED
  if (status === 503) return 14; // UNAVAILABLE
  if (status >= 500) return 13; // INTERNAL
  return 3; // INVALID_ARGUMENT
}

/**
 * Errors of POST /v1/traces: Tally's one JSON error body for a JSON request (or one whose type is
 * not OTLP's); for a protobuf request, what OTLP/HTTP prescribes: the same status with a
 * google.rpc.Status in protobuf. Retry-After goes with 429 and 503 either way.
 */
function traceErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (!isProtobufRequest(request)) {
    const appError = toAppError(error);
    if (appError.code === 'unsupported_media_type' && error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      const refused = new AppError(
        'unsupported_media_type',
        'Send the export as application/x-protobuf or application/json.',
      );
      return handleError(refused as unknown as FastifyError, request, reply);
    }
    return handleError(error, request, reply);
  }
  const appError = toAppError(error);
  if (appError.code === 'internal_error') request.log.error({ err: error }, 'unhandled error');
  else if (appError.code === 'service_unavailable') request.log.warn({ err: error }, 'database unavailable');
  if (appError.code === 'service_unavailable') reply.header('Retry-After', '5');
  if (appError.code === 'rate_limited') reply.header('Retry-After', '1');
  const status = ERROR_STATUS[appError.code];
  return reply
    .code(status)
    .type(PROTOBUF)
    .send(encodeRpcStatus(grpcCode(status), `${appError.code}: ${appError.message}`));
}

function registerTraceRoute(scope: FastifyInstance, metrics: OtlpMetrics): void {
  registerOtlpBodyParsers(scope);
  scope.setErrorHandler(traceErrorHandler);
  scope.post(
    '/v1/traces',
    {
      bodyLimit: OTLP_BODY_LIMIT_BYTES,
      // Counted per run once the body is decoded (as the batch counts per event).
      config: { rateClass: 'none' },
      // The body schema documents the route; the decoder (body.ts) is what validates it.
      validatorCompiler: () => () => true,
      schema: {
        tags: ['opentelemetry'],
        operationId: 'exportTraces',
        summary: 'OTLP/HTTP trace export: agent runs in OpenTelemetry spans become tracked events',
        description:
          'For OpenTelemetry exporters (OTEL_EXPORTER_OTLP_ENDPOINT); the client libraries do not wrap it. See docs/opentelemetry.md.',
        body: {
          content: {
            [PROTOBUF]: {
              schema: Type.String({
                description:
                  'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest; Content-Encoding: gzip allowed',
                contentMediaType: PROTOBUF,
              }),
            },
            [JSON_TYPE]: {
              schema: Type.Object(
                { resourceSpans: Type.Optional(Type.Array(Type.Object({}, { additionalProperties: true }))) },
                { description: 'OTLP/JSON ExportTraceServiceRequest; Content-Encoding: gzip allowed' },
              ),
            },
          },
        },
        response: traceResponses,
      },
    },
    async (request, reply) => {
      if (!(request.body instanceof OtlpBody))
        throw new AppError('invalid_otlp', 'Send an OTLP export body.');
      const { spans, invalid } = request.body.decoded;
      const auth = request.auth;
      const plan = auth ? scope.tally.config.plans[auth.org.plan] : null;
      // Each run costs one track call of the key's rate, up to one second's worth per export.
      const runs = spans.filter((s) => s.genAi && isTaskSpan(s)).length;
      const cost = Math.max(1, Math.min(runs, plan?.track_rate_per_second ?? 1));
      const granted = await consumeRate(scope, request, reply, 'track', cost);
      if (granted < cost)
        throw new AppError('rate_limited', 'Too many runs for this API key; retry in a second.');

      const result = await ingestSpans({ ctx: orgCtx(scope, request), spans });
      const inRuns = result.genAiSpans - result.heldSpans - result.outsideSpans - result.rejectedSpans;
      metrics.spans.inc({ result: 'ignored' }, spans.length - result.genAiSpans);
      metrics.spans.inc({ result: 'held' }, result.heldSpans);
      metrics.spans.inc({ result: 'outside' }, result.outsideSpans);
      metrics.spans.inc({ result: 'run' }, Math.max(0, inRuns));
      metrics.spans.inc({ result: 'rejected' }, result.rejectedSpans + invalid);
      metrics.runs.inc({ result: 'tracked' }, result.tracked);
      metrics.runs.inc({ result: 'replayed' }, result.replayed);
      metrics.runs.inc({ result: 'unresolved' }, result.unresolved);
      metrics.runs.inc({ result: 'rejected' }, result.rejectedRuns);
      if (result.tracked > 0) scope.metrics.eventsTracked.inc(result.tracked);

      const rejected = result.rejectedSpans + invalid;
      const reasons = [
        ...(invalid > 0
          ? [`${invalid} ${invalid === 1 ? 'span has' : 'spans have'} invalid ids or times`]
          : []),
        ...result.reasons,
      ];
      metrics.rejectedSpans.inc(rejected);
      const partial =
        rejected === 0
          ? null
          : { rejectedSpans: rejected, errorMessage: reasons.join('; ').slice(0, MAX_ERROR_MESSAGE) };
      if (isProtobufRequest(request))
        return reply.code(200).type(PROTOBUF).send(encodeExportResponse(partial));
      return reply
        .code(200)
        .type(JSON_TYPE)
        .send(
          partial === null
            ? {}
            : {
                partialSuccess: {
                  rejectedSpans: String(partial.rejectedSpans),
                  errorMessage: partial.errorMessage,
                },
              },
        );
    },
  );
}

const RuleParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
const RunListQuery = Type.Object(ListQueryFields, { additionalProperties: false });

function registerMappingRoutes(v1: FastifyInstance): void {
  const tags = ['opentelemetry'];
  v1.get(
    '/v1/otlp/mappings',
    {
      schema: {
        tags,
        operationId: 'listOtlpMappings',
        summary: 'The mapping rules from span attributes to task types and clients, in the order tried',
        response: { 200: described('The rules', MappingRuleListSchema), ...errorResponses },
      },
    },
    async (request) => ({ data: await listMappingRules({ ctx: orgCtx(v1, request) }) }),
  );

  v1.post<{ Body: Static<typeof MappingRuleBody> }>(
    '/v1/otlp/mappings',
    {
      schema: {
        tags,
        operationId: 'createOtlpMapping',
        summary: 'Add a mapping rule; unresolved runs it resolves are tracked at once',
        body: MappingRuleBody,
        response: {
          201: described('The rule, and how many runs it resolved', CreatedMappingRuleSchema),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const { rule, resolvedRuns } = await createMappingRule({
        ctx: orgCtx(v1, request),
        input: request.body,
      });
      return reply.code(201).send({ ...rule, resolved_runs: resolvedRuns });
    },
  );

  v1.delete<{ Params: Static<typeof RuleParams> }>(
    '/v1/otlp/mappings/:id',
    {
      schema: {
        tags,
        params: RuleParams,
        operationId: 'deleteOtlpMapping',
        summary: 'Delete a mapping rule (runs tracked with it keep their task type)',
        response: { 204: described('Deleted; no body', Type.Null()), ...errorResponses },
      },
    },
    async (request, reply) => {
      await deleteMappingRule({ ctx: orgCtx(v1, request), id: request.params.id });
      return reply.code(204).send();
    },
  );

  v1.get<{ Querystring: Static<typeof RunListQuery> }>(
    '/v1/otlp/unresolved-runs',
    {
      schema: {
        tags,
        querystring: RunListQuery,
        operationId: 'listOtlpUnresolvedRuns',
        summary: 'Runs received whose task type could not be resolved, newest first',
        response: { 200: described('A page of unresolved runs', UnresolvedRunListSchema), ...errorResponses },
      },
    },
    async (request) =>
      listUnresolvedRuns({
        ctx: orgCtx(v1, request),
        limit: request.query.limit,
        cursor: request.query.cursor,
      }),
  );

  v1.post(
    '/v1/otlp/unresolved-runs/retry',
    {
      schema: {
        tags,
        operationId: 'retryOtlpUnresolvedRuns',
        summary: 'Track the unresolved runs the rules and task types resolve now',
        response: { 200: described('How many runs were tracked', RetriedRunsSchema), ...errorResponses },
      },
    },
    async (request) => ({ resolved_runs: await retryUnresolvedRuns({ ctx: orgCtx(v1, request) }) }),
  );

  v1.delete<{ Params: Static<typeof RuleParams> }>(
    '/v1/otlp/unresolved-runs/:id',
    {
      schema: {
        tags,
        params: RuleParams,
        operationId: 'dismissOtlpUnresolvedRun',
        summary: 'Dismiss an unresolved run: it is never tracked',
        response: { 204: described('Dismissed; no body', Type.Null()), ...errorResponses },
      },
    },
    async (request, reply) => {
      await dismissUnresolvedRun({ ctx: orgCtx(v1, request), id: request.params.id });
      return reply.code(204).send();
    },
  );
}

/**
 * OpenTelemetry ingest (docs/opentelemetry.md): POST /v1/traces in a plugin scope of its own
 * (its body parsers and error answers are OTLP's), and the mapping-rule API. Called inside the
 * authenticated /v1 scope.
 */
export function registerOtlpRoutes(v1: FastifyInstance): void {
  const metrics = registerOtlpMetrics(v1.metrics.registry, v1.tally.storage.db);
  void v1.register(async (scope) => registerTraceRoute(scope, metrics));
  registerMappingRoutes(v1);
}
