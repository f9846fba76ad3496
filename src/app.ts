import type { FastifyInstance } from 'fastify';
import type { AppDeps } from './http/app-types.js';
import { registerAuth } from './http/auth.js';
import { createMetrics } from './http/metrics.js';
import { createServer, type ServerOptions } from './http/server.js';
import { registerServiceRoutes } from './http/service-routes.js';
import { registerAuditRoutes } from './audit/routes.js';
import { registerBudgetRoutes } from './budgets/routes.js';
import { registerCatalogueRoutes } from './catalogue/routes.js';
import { registerDashboard } from './dashboard/routes.js';
import { registerForecastRoutes } from './forecast/routes.js';
import { registerOtlpRoutes } from './otlp/routes.js';
import { registerPaybackRoutes } from './payback/routes.js';
import { registerPeriodRoutes } from './periods/routes.js';
import { registerReference } from './reference/routes.js';
import { registerReportEmailRoutes } from './report-emails/routes.js';
import { registerUnsubscribe } from './report-emails/unsubscribe.js';
import { registerReportRoutes } from './reports/routes.js';
import { registerSettingsRoutes } from './settings/routes.js';
import { IngestGate } from './fold/ingest-gate.js';
import { foldLag } from './fold/tail.js';
import { TailMeter } from './fold/tail-meter.js';
import { registerTrackingRoutes } from './tracking/routes.js';
import { registerWebhookRoutes } from './webhooks/routes.js';
import { registerMemberRoutes } from './members/routes.js';
import { registerSsoRoutes } from './sso/routes.js';
import { registerAssumptionRoutes } from './assumptions/routes.js';
import { registerLedgerRoutes } from './ledger/routes.js';

/** The whole application: the HTTP server, the folding stage's gauges and every feature's routes. */
export async function buildApp(deps: AppDeps, options: ServerOptions = {}): Promise<FastifyInstance> {
  const { db, engine } = deps.storage;
  // The gauges read the tail on a SQLite file's read connection, beside the folding pass.
  const reads = deps.storage.reader ?? db;
  const now = () => deps.clock.now().getTime();
  const tailMeter = new TailMeter(reads, engine, now);
  const metrics = createMetrics(
    () => tailMeter.read(),
    () => deps.fold?.errors ?? { unavailable: 0, failed: 0 },
  );
  const app = await createServer(deps, metrics, options);

  const { ingestMaxLagSeconds } = deps.config;
  app.decorate(
    'ingestGate',
    ingestMaxLagSeconds > 0
      ? new IngestGate(() => foldLag(reads, engine, now()), ingestMaxLagSeconds * 1000)
      : null,
  );

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
    registerPeriodRoutes(v1);
    registerMemberRoutes(v1);
    registerSsoRoutes(v1);
    registerAssumptionRoutes(v1);
    registerLedgerRoutes(v1);
  });
  await registerDashboard(app);
  registerReference(app);
  registerUnsubscribe(app);
  return app;
}
