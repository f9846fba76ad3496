import type { FastifyInstance } from 'fastify';
import type { Static } from '@sinclair/typebox';
import { orgCtx } from '../http/app-types.js';
import { described, errorResponses } from '../http/schemas.js';
import { removeOverride, setOverride } from './overrides.js';
import {
  CreateTaskTypeBody,
  OverrideBody,
  RemoveOverrideQuery,
  TaskTypeListQuery,
  TaskTypeListSchema,
  TaskTypeParams,
  TaskTypeSchema,
} from './schema.js';
import { archiveTaskType, createCustomTaskType, listTaskTypes } from './task-types.js';

type Params = Static<typeof TaskTypeParams>;
const one = (description: string) => ({ 200: described(description, TaskTypeSchema), ...errorResponses });

export function registerCatalogueRoutes(app: FastifyInstance): void {
  app.get<{ Querystring: Static<typeof TaskTypeListQuery> }>(
    '/v1/task-types',
    {
      schema: {
        tags: ['task-types'],
        operationId: 'listTaskTypes',
        summary: 'List built-in task types (with overrides), then custom ones',
        querystring: TaskTypeListQuery,
        response: {
          200: described('Built-in types first, then custom ones, by key', TaskTypeListSchema),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { category, include_archived: includeArchived } = request.query;
      return {
        data: await listTaskTypes({ ctx: orgCtx(app, request), input: { category, includeArchived } }),
      };
    },
  );

  app.post<{ Body: Static<typeof CreateTaskTypeBody> }>(
    '/v1/task-types',
    {
      config: { plan: 'pro' },
      schema: {
        tags: ['task-types'],
        operationId: 'createTaskType',
        summary: 'Create a custom task type',
        body: CreateTaskTypeBody,
        response: { 201: described('The created task type', TaskTypeSchema), ...errorResponses },
      },
    },
    async (request, reply) => {
      const record = await createCustomTaskType({ ctx: orgCtx(app, request), input: request.body });
      return reply.code(201).send(record);
    },
  );

  app.post<{ Params: Params; Body: Static<typeof OverrideBody> }>(
    '/v1/task-types/:key/override',
    {
      config: { plan: 'pro' },
      schema: {
        tags: ['task-types'],
        operationId: 'setTaskTypeOverride',
        summary: "Set the organisation's baseline for a built-in task type",
        params: TaskTypeParams,
        body: OverrideBody,
        response: one('The task type with its override set'),
      },
    },
    async (request) =>
      setOverride({ ctx: orgCtx(app, request), key: request.params.key, input: request.body }),
  );

  app.delete<{ Params: Params; Querystring: Static<typeof RemoveOverrideQuery> }>(
    '/v1/task-types/:key/override',
    {
      config: { plan: 'pro' },
      schema: {
        tags: ['task-types'],
        operationId: 'removeTaskTypeOverride',
        summary:
          'Remove the override (from effective_from, default now); the built-in default baseline applies again',
        params: TaskTypeParams,
        querystring: RemoveOverrideQuery,
        response: one('The task type with override: null'),
      },
    },
    async (request) =>
      removeOverride({
        ctx: orgCtx(app, request),
        key: request.params.key,
        effectiveFrom: request.query.effective_from,
      }),
  );

  app.delete<{ Params: Params }>(
    '/v1/task-types/:key',
    {
      config: { plan: 'pro' },
      schema: {
        tags: ['task-types'],
        operationId: 'archiveTaskType',
        summary: 'Archive a custom task type; built-ins cannot be archived',
        params: TaskTypeParams,
        response: one('The task type with status: archived'),
      },
    },
    async (request) => archiveTaskType({ ctx: orgCtx(app, request), key: request.params.key }),
  );
}
