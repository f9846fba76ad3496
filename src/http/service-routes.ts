import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { AppError } from '../errors.js';
import { sendError } from './errors.js';

/** Unauthenticated service endpoints: liveness, readiness, metrics and the OpenAPI document. */
export function registerServiceRoutes(app: FastifyInstance): void {
  const hidden = { schema: { hide: true } };
  app.get('/healthz', hidden, async () => ({ status: 'ok' }));

  app.get('/readyz', hidden, async (request, reply) => {
    // Its own short bound: a load balancer asking must hear "not ready" within seconds, whatever
    // the pool's and the statement's timeouts are.
    const limitMs = app.tally.config.database.readyTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        sql`select 1`.execute(app.tally.storage.db),
        new Promise((_resolve, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${limitMs} ms`)), limitMs);
        }),
      ]);
      return { status: 'ok', database: app.tally.storage.engine };
    } catch (error) {
      request.log.warn({ err: error }, 'readiness check failed');
      reply.header('Retry-After', '5');
      return sendError(reply, new AppError('service_unavailable', 'The database cannot be reached.'));
    } finally {
      clearTimeout(timer);
    }
  });

  app.get('/metrics', hidden, async (_request, reply) => {
    reply.header('Content-Type', app.metrics.registry.contentType);
    return app.metrics.registry.metrics();
  });

  app.get('/openapi.json', hidden, async () => app.swagger());
}
