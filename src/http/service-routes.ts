import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { AppError } from '../errors.js';
import { sendError } from './errors.js';

/** Unauthenticated service endpoints: liveness, readiness, metrics and the OpenAPI document. */
export function registerServiceRoutes(app: FastifyInstance): void {
  const hidden = { schema: { hide: true } };
  app.get('/healthz', hidden, async () => ({ status: 'ok' }));

  app.get('/readyz', hidden, async (_request, reply) => {
    try {
      await sql`select 1`.execute(app.tally.storage.db);
      return { status: 'ok', database: app.tally.storage.engine };
    } catch {
      reply.header('Retry-After', '5');
      return sendError(reply, new AppError('service_unavailable', 'The database cannot be reached.'));
    }
  });

  app.get('/metrics', hidden, async (_request, reply) => {
    reply.header('Content-Type', app.metrics.registry.contentType);
    return app.metrics.registry.metrics();
  });

  app.get('/openapi.json', hidden, async () => app.swagger());
}
