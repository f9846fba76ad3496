import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { orgCtx } from '../http/app-types.js';
import { described, errorResponses, named } from '../http/schemas.js';
import { listDeliveries } from './delivery-log.js';
import {
  CreatedWebhookSchema,
  CreateWebhookBody,
  DeliveryListSchema,
  UpdateWebhookBody,
  WebhookListQuery,
  WebhookListSchema,
  WebhookParams,
  WebhookSchema,
} from './schema.js';
import {
  createWebhook,
  deleteWebhook,
  getWebhookRow,
  listWebhooks,
  updateWebhook,
  webhookView,
} from './subscriptions.js';
import { sendTestPing } from './test-ping.js';

type Params = Static<typeof WebhookParams>;
const base = { tags: ['webhooks'], params: WebhookParams };
const config = { plan: 'pro' } as const;

export function registerWebhookRoutes(app: FastifyInstance): void {
  app.post<{ Body: Static<typeof CreateWebhookBody> }>(
    '/v1/webhooks',
    {
      config,
      schema: {
        tags: ['webhooks'],
        operationId: 'createWebhook',
        summary: 'Subscribe a URL to events; the response carries the signing secret once',
        body: CreateWebhookBody,
        response: {
          201: described('The webhook with its signing secret (shown this once)', CreatedWebhookSchema),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const created = await createWebhook({ ctx: orgCtx(app, request), input: request.body });
      return reply.code(201).send(created);
    },
  );

  app.get<{ Querystring: Static<typeof WebhookListQuery> }>(
    '/v1/webhooks',
    {
      config,
      schema: {
        tags: ['webhooks'],
        operationId: 'listWebhooks',
        summary: 'List webhooks, newest first',
        querystring: WebhookListQuery,
        response: {
          200: described('A page of webhooks; next_cursor fetches the next one', WebhookListSchema),
          ...errorResponses,
        },
      },
    },
    async (request) =>
      listWebhooks({ ctx: orgCtx(app, request), limit: request.query.limit, cursor: request.query.cursor }),
  );

  app.get<{ Params: Params }>(
    '/v1/webhooks/:id',
    {
      config,
      schema: {
        ...base,
        operationId: 'getWebhook',
        summary: 'One webhook',
        response: { 200: described('The webhook', WebhookSchema), ...errorResponses },
      },
    },
    async (request) => webhookView(await getWebhookRow({ ctx: orgCtx(app, request), id: request.params.id })),
  );

  app.patch<{ Params: Params; Body: Static<typeof UpdateWebhookBody> }>(
    '/v1/webhooks/:id',
    {
      config,
      schema: {
        ...base,
        operationId: 'updateWebhook',
        summary: 'Change a webhook; status "active" reactivates it',
        body: UpdateWebhookBody,
        response: { 200: described('The webhook after the change', WebhookSchema), ...errorResponses },
      },
    },
    async (request) =>
      updateWebhook({ ctx: orgCtx(app, request), id: request.params.id, input: request.body }),
  );

  app.delete<{ Params: Params }>(
    '/v1/webhooks/:id',
    {
      config,
      schema: {
        ...base,
        operationId: 'deleteWebhook',
        summary: 'Delete a webhook; pending deliveries are canceled',
        response: { 204: described('Deleted; no body', Type.Null()), ...errorResponses },
      },
    },
    async (request, reply) => {
      await deleteWebhook({ ctx: orgCtx(app, request), id: request.params.id });
      return reply.code(204).send();
    },
  );

  app.post<{ Params: Params }>(
    '/v1/webhooks/:id/test',
    {
      config,
      schema: {
        ...base,
        operationId: 'testWebhook',
        summary: 'Send a test.ping (once, whatever the state and event types)',
        response: {
          202: described(
            'The ping is queued; its delivery appears in the delivery log',
            named('TestPingResult', Type.Object({ message_id: Type.String() })),
          ),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const sent = await sendTestPing({ ctx: orgCtx(app, request), id: request.params.id });
      return reply.code(202).send(sent);
    },
  );

  app.get<{ Params: Params; Querystring: Static<typeof WebhookListQuery> }>(
    '/v1/webhooks/:id/deliveries',
    {
      config,
      schema: {
        ...base,
        operationId: 'listWebhookDeliveries',
        summary: 'The delivery log: every attempt with status code, response body, error and signature',
        querystring: WebhookListQuery,
        response: {
          200: described('A page of deliveries; next_cursor fetches the next one', DeliveryListSchema),
          ...errorResponses,
        },
      },
    },
    async (request) =>
      listDeliveries({
        ctx: orgCtx(app, request),
        webhookId: request.params.id,
        limit: request.query.limit,
        cursor: request.query.cursor,
      }),
  );
}
