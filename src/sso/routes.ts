import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { orgCtx } from '../http/app-types.js';
import { described, errorResponses } from '../http/schemas.js';
import { deleteSsoConnection, getSsoConnection, putSsoConnection } from './connections.js';
import { SsoConnectionSchema, SsoPutBody } from './schema.js';

const config = { plan: 'enterprise' } as const;

/** `/v1/sso`: the organisation's OpenID Connect single sign-on (Enterprise, admin keys). */
export function registerSsoRoutes(app: FastifyInstance): void {
  app.get(
    '/v1/sso',
    {
      config,
      schema: {
        tags: ['sso'],
        operationId: 'getSso',
        summary: 'The single sign-on configuration (the client secret is never returned)',
        response: { 200: described('The configuration', SsoConnectionSchema), ...errorResponses },
      },
    },
    async (request) => getSsoConnection({ ctx: orgCtx(app, request) }),
  );

  app.put<{ Body: Static<typeof SsoPutBody> }>(
    '/v1/sso',
    {
      config,
      schema: {
        tags: ['sso'],
        operationId: 'putSso',
        summary: 'Configure single sign-on with an OpenID Connect provider (creates or replaces)',
        body: SsoPutBody,
        response: {
          200: described('The configuration after the change', SsoConnectionSchema),
          ...errorResponses,
        },
      },
    },
    async (request) => putSsoConnection({ ctx: orgCtx(app, request), input: request.body }),
  );

  app.delete(
    '/v1/sso',
    {
      config,
      schema: {
        tags: ['sso'],
        operationId: 'deleteSso',
        summary: 'Remove single sign-on; members sign in with a password again',
        response: { 204: described('Removed; no body', Type.Null()), ...errorResponses },
      },
    },
    async (request, reply) => {
      await deleteSsoConnection({ ctx: orgCtx(app, request) });
      return reply.code(204).send();
    },
  );
}
