import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import type { AppDeps } from './app-types.js';
import { registerAuth } from './auth.js';
import { handleError, sendError } from './errors.js';
import { clientErrorHandler, frameworkErrors, registerInputGuard } from './input-guard.js';
import { serializeRequest } from './log-redaction.js';
import { createMetrics } from './metrics.js';
import { SWAGGER_OPTIONS } from './openapi.js';
import { foldLag } from '../fold/tail.js';
import { TailMeter } from '../fold/tail-meter.js';
import { IngestGate } from '../fold/ingest-gate.js';
import { registerServiceRoutes } from './service-routes.js';
import { registerGracefulShutdown } from './shutdown.js';
import { registerTrackingRoutes } from '../tracking/routes.js';
import { registerSettingsRoutes } from '../settings/routes.js';
import { registerReportRoutes } from '../reports/routes.js';
import { registerCatalogueRoutes } from '../catalogue/routes.js';
import { registerAuditRoutes } from '../audit/routes.js';
import { registerWebhookRoutes } from '../webhooks/routes.js';
import { registerDashboard } from '../dashboard/routes.js';
import { registerReference } from '../reference/routes.js';
import { registerOtlpRoutes } from '../otlp/routes.js';
import { registerForecastRoutes } from '../forecast/routes.js';
import { registerBudgetRoutes } from '../budgets/routes.js';
import { registerPaybackRoutes } from '../payback/routes.js';
import { registerReportEmailRoutes } from '../report-emails/routes.js';
import { registerUnsubscribe } from '../report-emails/unsubscribe.js';

const addFormats = addFormatsModule.default;
export const BODY_LIMIT_BYTES = 64 * 1024;

function makeAjv(coerce: boolean): Ajv {
  // Bodies are taken as sent (no coercion, no silent removal of unknown fields); query strings
  // and headers arrive as text and are coerced to the schema's types.
  const ajv = new Ajv({
    allErrors: true,
    removeAdditional: false,
    useDefaults: true,
    coerceTypes: coerce ? 'array' : false,
    strict: false,
  });
  addFormats(ajv);
  return ajv;
}

export interface BuildOptions {
  /** false: no logs; else the level (default TALLY_LOG_LEVEL) and where they go (default stdout). */
  logger?: false | { level: string; stream?: { write(line: string): void } };
}

export async function buildApp(deps: AppDeps, options: BuildOptions = {}): Promise<FastifyInstance> {
  const timeouts = deps.config.http;
  const app = Fastify({
    // Request lines show the URL with secrets sent in its query string redacted.
    logger:
      options.logger === false
        ? false
        : { ...(options.logger ?? { level: deps.config.logLevel }), serializers: { req: serializeRequest } },
    // Slow clients (one that sends its headers and a few bytes, then stalls) must not hold a
    // connection, or shutdown, for ever. Node checks the request and header timeouts on an
    // interval (30 s by default), so it is kept well below the shortest of them.
    requestTimeout: timeouts.requestTimeoutMs,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    connectionTimeout: timeouts.idleTimeoutMs,
    http: {
      headersTimeout: timeouts.headersTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(timeouts.headersTimeoutMs / 4))),
    },
    bodyLimit: BODY_LIMIT_BYTES,
    genReqId: () => newId('req'),
    requestIdHeader: false,
    // Our own onRequest hook answers while closing, in the one error body (Fastify's 503 fast
    // path writes its own body and skips every hook).
    return503OnClosing: false,
    // Requests refused before routing answer in the one error body too (input-guard.ts).
    clientErrorHandler,
    frameworkErrors,
  });
  const bodyAjv = makeAjv(false);
  const textAjv = makeAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object),
  );

  // Bodies are JSON only (DESIGN §2): Fastify's built-in text/plain parser would hand a string to
  // validation (422) where the client needs to hear 415.
  app.removeContentTypeParser('text/plain');
  registerInputGuard(app);

  app.decorate('tally', deps);
  const tailMeter = new TailMeter(deps.storage.db, deps.storage.engine, () => deps.clock.now().getTime());
  app.decorate(
    'metrics',
    createMetrics(
      () => tailMeter.read(),
      () => deps.fold?.errors ?? { unavailable: 0, failed: 0 },
    ),
  );
  const { ingestMaxLagSeconds } = deps.config;
  app.decorate(
    'ingestGate',
    ingestMaxLagSeconds > 0
      ? new IngestGate(
          () => foldLag(deps.storage.db, deps.storage.engine, deps.clock.now().getTime()),
          ingestMaxLagSeconds * 1000,
        )
      : null,
  );
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new AppError('not_found', `No route ${request.method} ${request.url.split('?')[0]}.`)),
  );
  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });
  registerGracefulShutdown(app, deps.config.shutdownTimeoutMs);
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    app.metrics.requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    app.metrics.duration.observe({ route }, reply.elapsedTime / 1000);
  });
  await app.register(swagger, SWAGGER_OPTIONS);

  registerServiceRoutes(app);
  await app.register(async (v1) => {
    registerAuth(v1);
    registerTrackingRoutes(v1);
    registerCatalogueRoutes(v1);
    registerAuditRoutes(v1);
    registerSettingsRoutes(v1);
    registerReportRoutes(v1);
    registerWebhookRoutes(v1);
    registerOtlpRoutes(v1);
    registerForecastRoutes(v1);
    registerBudgetRoutes(v1);
    registerPaybackRoutes(v1);
    registerReportEmailRoutes(v1);
  });
  await registerDashboard(app);
  registerReference(app);
  registerUnsubscribe(app);
  return app;
}
