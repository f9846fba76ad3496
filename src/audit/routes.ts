import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { orgCtx } from '../http/app-types.js';
import { described, errorResponses, ListQueryFields, named } from '../http/schemas.js';
import { listAuditLog } from './audit-log.js';

const AuditQuery = Type.Object({ ...ListQueryFields }, { additionalProperties: false });

const AuditEntrySchema = Type.Object({
  id: Type.String(),
  at: Type.String({ format: 'date-time' }),
  actor_key_id: Type.Union([Type.String(), Type.Null()]),
  // The person who acted: signed in to the dashboard, or the creator of the key used.
  actor_account_id: Type.Union([Type.String(), Type.Null()]),
  actor_email: Type.Union([Type.String(), Type.Null()]),
  action: Type.String(),
  target: Type.String(),
  // The changed resource as it was before and after, in its API shape; null for none.
  before: Type.Unknown(),
  after: Type.Unknown(),
  reason: Type.Union([Type.String(), Type.Null()]),
});

export function registerAuditRoutes(app: FastifyInstance): void {
  app.get<{ Querystring: Static<typeof AuditQuery> }>(
    '/v1/audit-log',
    {
      config: { plan: 'pro' },
      schema: {
        tags: ['audit'],
        operationId: 'listAuditLog',
        summary: 'Changes to task types and webhooks, newest first',
        querystring: AuditQuery,
        response: {
          200: described(
            'A page of audit entries; next_cursor fetches the next one',
            named(
              'AuditLogPage',
              Type.Object({
                data: Type.Array(named('AuditEntry', AuditEntrySchema)),
                next_cursor: Type.Union([Type.String(), Type.Null()]),
              }),
            ),
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { limit, cursor } = request.query;
      return listAuditLog({ ctx: orgCtx(app, request), limit, cursor });
    },
  );
}
