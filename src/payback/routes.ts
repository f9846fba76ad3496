import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { orgCtx } from '../http/app-types.js';
import { described, errorResponses } from '../http/schemas.js';
import {
  createFixedCost,
  deleteFixedCost,
  fixedCostView,
  getFixedCost,
  listFixedCosts,
  updateFixedCost,
} from './fixed-costs.js';
import { buildPayback, paybackView } from './payback.js';
import {
  CreateFixedCostBody,
  FixedCostListQuery,
  FixedCostListSchema,
  FixedCostParams,
  FixedCostSchema,
  PaybackQuery,
  PaybackSchema,
  UpdateFixedCostBody,
} from './schema.js';

type Params = Static<typeof FixedCostParams>;
const config = { plan: 'pro' } as const;
const base = { tags: ['payback'], params: FixedCostParams };

export function registerPaybackRoutes(app: FastifyInstance): void {
  app.get<{ Querystring: Static<typeof PaybackQuery> }>(
    '/v1/reports/payback',
    {
      config,
      schema: {
        tags: ['reports'],
        operationId: 'getPayback',
        summary:
          'ROI net of fixed costs, cumulative net saved after fixed costs by month, payback month, FTE freed',
        querystring: PaybackQuery,
        response: { 200: described('Payback and ROI', PaybackSchema), ...errorResponses },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const payback = await buildPayback({ ctx, period: request.query.period ?? 'all' });
      return paybackView(payback, ctx.org.currency);
    },
  );

  app.post<{ Body: Static<typeof CreateFixedCostBody> }>(
    '/v1/fixed-costs',
    {
      config,
      schema: {
        tags: ['payback'],
        operationId: 'createFixedCost',
        summary:
          'Add a fixed cost: monthly recurring (licences, seats, hosting) or one-off (building the agents)',
        body: CreateFixedCostBody,
        response: { 201: described('The fixed cost', FixedCostSchema), ...errorResponses },
      },
    },
    async (request, reply) => {
      const ctx = orgCtx(app, request);
      const cost = await createFixedCost({ ctx, input: request.body });
      return reply.code(201).send(fixedCostView(cost, ctx.org.currency));
    },
  );

  app.get<{ Querystring: Static<typeof FixedCostListQuery> }>(
    '/v1/fixed-costs',
    {
      config,
      schema: {
        tags: ['payback'],
        operationId: 'listFixedCosts',
        summary: 'List fixed costs, newest first',
        querystring: FixedCostListQuery,
        response: {
          200: described('A page of fixed costs; next_cursor fetches the next one', FixedCostListSchema),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const page = await listFixedCosts({ ctx, limit: request.query.limit, cursor: request.query.cursor });
      return {
        data: page.data.map((c) => fixedCostView(c, ctx.org.currency)),
        next_cursor: page.next_cursor,
      };
    },
  );

  app.get<{ Params: Params }>(
    '/v1/fixed-costs/:id',
    {
      config,
      schema: {
        ...base,
        operationId: 'getFixedCost',
        summary: 'One fixed cost',
        response: { 200: described('The fixed cost', FixedCostSchema), ...errorResponses },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      return fixedCostView(await getFixedCost({ ctx, id: request.params.id }), ctx.org.currency);
    },
  );

  app.patch<{ Params: Params; Body: Static<typeof UpdateFixedCostBody> }>(
    '/v1/fixed-costs/:id',
    {
      config,
      schema: {
        ...base,
        operationId: 'updateFixedCost',
        summary: 'Change a fixed cost',
        body: UpdateFixedCostBody,
        response: { 200: described('The fixed cost after the change', FixedCostSchema), ...errorResponses },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const cost = await updateFixedCost({ ctx, id: request.params.id, patch: request.body });
      return fixedCostView(cost, ctx.org.currency);
    },
  );

  app.delete<{ Params: Params }>(
    '/v1/fixed-costs/:id',
    {
      config,
      schema: {
        ...base,
        operationId: 'deleteFixedCost',
        summary: 'Delete a fixed cost',
        response: { 204: described('Deleted; no body', Type.Null()), ...errorResponses },
      },
    },
    async (request, reply) => {
      await deleteFixedCost({ ctx: orgCtx(app, request), id: request.params.id });
      return reply.code(204).send();
    },
  );
}
