import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { orgCtx } from '../http/app-types.js';
import { described, errorResponses } from '../http/schemas.js';
import { createBudget, deleteBudget, getBudget, listBudgets, updateBudget } from './budgets.js';
import {
  BudgetListQuery,
  BudgetListSchema,
  BudgetParams,
  BudgetSchema,
  CreateBudgetBody,
  UpdateBudgetBody,
} from './schema.js';
import { budgetViews } from './status.js';

type Params = Static<typeof BudgetParams>;
const config = { plan: 'pro' } as const;
const base = { tags: ['budgets'], params: BudgetParams };

export function registerBudgetRoutes(app: FastifyInstance): void {
  app.post<{ Body: Static<typeof CreateBudgetBody> }>(
    '/v1/budgets',
    {
      config,
      schema: {
        tags: ['budgets'],
        operationId: 'createBudget',
        summary:
          'Create a monthly budget on agent spend (the organisation, an agent, a client or a task type)',
        body: CreateBudgetBody,
        response: {
          201: described('The budget with its status this month', BudgetSchema),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const ctx = orgCtx(app, request);
      const budget = await createBudget({ ctx, input: request.body });
      const [view] = await budgetViews({ ctx, budgets: [budget] });
      return reply.code(201).send(view);
    },
  );

  app.get<{ Querystring: Static<typeof BudgetListQuery> }>(
    '/v1/budgets',
    {
      config,
      schema: {
        tags: ['budgets'],
        operationId: 'listBudgets',
        summary: 'List budgets, newest first, each with its spend, forecast and run-out date this month',
        querystring: BudgetListQuery,
        response: {
          200: described('A page of budgets; next_cursor fetches the next one', BudgetListSchema),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const { data, next_cursor } = await listBudgets({
        ctx,
        limit: request.query.limit,
        cursor: request.query.cursor,
      });
      return { data: await budgetViews({ ctx, budgets: data }), next_cursor };
    },
  );

  app.get<{ Params: Params }>(
    '/v1/budgets/:id',
    {
      config,
      schema: {
        ...base,
        operationId: 'getBudget',
        summary: 'One budget with its status this month',
        response: { 200: described('The budget', BudgetSchema), ...errorResponses },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const budget = await getBudget({ ctx, id: request.params.id });
      const [view] = await budgetViews({ ctx, budgets: [budget] });
      return view;
    },
  );

  app.patch<{ Params: Params; Body: Static<typeof UpdateBudgetBody> }>(
    '/v1/budgets/:id',
    {
      config,
      schema: {
        ...base,
        operationId: 'updateBudget',
        summary: 'Change a budget (name, scope, amount, thresholds)',
        body: UpdateBudgetBody,
        response: { 200: described('The budget after the change', BudgetSchema), ...errorResponses },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const budget = await updateBudget({ ctx, id: request.params.id, patch: request.body });
      const [view] = await budgetViews({ ctx, budgets: [budget] });
      return view;
    },
  );

  app.delete<{ Params: Params }>(
    '/v1/budgets/:id',
    {
      config,
      schema: {
        ...base,
        operationId: 'deleteBudget',
        summary: 'Delete a budget',
        response: { 204: described('Deleted; no body', Type.Null()), ...errorResponses },
      },
    },
    async (request, reply) => {
      await deleteBudget({ ctx: orgCtx(app, request), id: request.params.id });
      return reply.code(204).send();
    },
  );
}
