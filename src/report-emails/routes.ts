import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { orgCtx } from '../http/app-types.js';
import { described, errorResponses } from '../http/schemas.js';
import {
  CreateScheduleBody,
  ScheduleListQuery,
  ScheduleListSchema,
  ScheduleParams,
  ScheduleSchema,
  SendNowSchema,
  UpdateScheduleBody,
} from './schema.js';
import {
  createSchedule,
  deleteSchedule,
  getSchedule,
  listSchedules,
  scheduleView,
  updateSchedule,
} from './schedules.js';
import { sendScheduleNow } from './send.js';

type Params = Static<typeof ScheduleParams>;
const config = { plan: 'pro' } as const;
const base = { tags: ['report e-mails'], params: ScheduleParams };

export function registerReportEmailRoutes(app: FastifyInstance): void {
  app.post<{ Body: Static<typeof CreateScheduleBody> }>(
    '/v1/report-schedules',
    {
      config,
      schema: {
        tags: ['report e-mails'],
        operationId: 'createReportSchedule',
        summary: 'Schedule a weekly or monthly report e-mail (HTML summary, CSV attached) to recipients',
        body: CreateScheduleBody,
        response: { 201: described('The schedule', ScheduleSchema), ...errorResponses },
      },
    },
    async (request, reply) => {
      const ctx = orgCtx(app, request);
      const schedule = await createSchedule({ ctx, input: request.body });
      return reply.code(201).send(scheduleView(schedule, ctx.clock.now()));
    },
  );

  app.get<{ Querystring: Static<typeof ScheduleListQuery> }>(
    '/v1/report-schedules',
    {
      config,
      schema: {
        tags: ['report e-mails'],
        operationId: 'listReportSchedules',
        summary: 'List report e-mail schedules, newest first',
        querystring: ScheduleListQuery,
        response: {
          200: described('A page of schedules; next_cursor fetches the next one', ScheduleListSchema),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const page = await listSchedules({ ctx, limit: request.query.limit, cursor: request.query.cursor });
      return { data: page.data.map((s) => scheduleView(s, ctx.clock.now())), next_cursor: page.next_cursor };
    },
  );

  app.get<{ Params: Params }>(
    '/v1/report-schedules/:id',
    {
      config,
      schema: {
        ...base,
        operationId: 'getReportSchedule',
        summary: 'One report e-mail schedule',
        response: { 200: described('The schedule', ScheduleSchema), ...errorResponses },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      return scheduleView(await getSchedule({ ctx, id: request.params.id }), ctx.clock.now());
    },
  );

  app.patch<{ Params: Params; Body: Static<typeof UpdateScheduleBody> }>(
    '/v1/report-schedules/:id',
    {
      config,
      schema: {
        ...base,
        operationId: 'updateReportSchedule',
        summary:
          'Change the frequency or the recipients (an unsubscribed recipient who stays listed stays unsubscribed)',
        body: UpdateScheduleBody,
        response: { 200: described('The schedule after the change', ScheduleSchema), ...errorResponses },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const schedule = await updateSchedule({ ctx, id: request.params.id, patch: request.body });
      return scheduleView(schedule, ctx.clock.now());
    },
  );

  app.delete<{ Params: Params }>(
    '/v1/report-schedules/:id',
    {
      config,
      schema: {
        ...base,
        operationId: 'deleteReportSchedule',
        summary: 'Delete a report e-mail schedule',
        response: { 204: described('Deleted; no body', Type.Null()), ...errorResponses },
      },
    },
    async (request, reply) => {
      await deleteSchedule({ ctx: orgCtx(app, request), id: request.params.id });
      return reply.code(204).send();
    },
  );

  app.post<{ Params: Params }>(
    '/v1/report-schedules/:id/send',
    {
      config,
      schema: {
        ...base,
        operationId: 'sendReportScheduleNow',
        summary: 'Send the latest due period now to the recipients who have not had it',
        response: { 202: described('The e-mails are queued', SendNowSchema), ...errorResponses },
      },
    },
    async (request, reply) => {
      const sent = await sendScheduleNow({ ctx: orgCtx(app, request), id: request.params.id });
      return reply.code(202).send(sent);
    },
  );
}
