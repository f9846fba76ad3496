import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { orgCtx } from '../http/app-types.js';
import { described, errorResponses } from '../http/schemas.js';
import { periodChanges } from './changes.js';
import { statementCsv } from './csv.js';
import { closePeriod, getPeriod, listPeriods, listStatements, reopenPeriod } from './periods.js';
import {
  ChangesSchema,
  PeriodListSchema,
  PeriodParams,
  PeriodSchema,
  ReasonBody,
  StatementListSchema,
  StatementQuery,
  StatementSchema,
} from './schema.js';

type Params = Static<typeof PeriodParams>;
type Body = Static<typeof ReasonBody>;
const config = { plan: 'pro' } as const;
const base = { tags: ['periods'], params: PeriodParams };
const CSV_TYPE = 'text/csv; charset=utf-8';
const CsvSchema = Type.String({ description: 'CSV document (RFC 4180, UTF-8), one line per figure set' });

export function registerPeriodRoutes(app: FastifyInstance): void {
  app.get(
    '/v1/periods',
    {
      config,
      schema: {
        tags: ['periods'],
        operationId: 'listPeriods',
        summary: 'Months ever closed, newest first, with their status and latest closing',
        querystring: Type.Object({}, { additionalProperties: false }),
        response: { 200: described('The closed and reopened months', PeriodListSchema), ...errorResponses },
      },
    },
    async (request) => ({ data: await listPeriods({ ctx: orgCtx(app, request) }) }),
  );

  app.post<{ Params: Params; Body: Body }>(
    '/v1/periods/:month/close',
    {
      config,
      schema: {
        ...base,
        operationId: 'closePeriod',
        summary: 'Close a month that has ended (UTC) and freeze its statement',
        body: ReasonBody,
        response: { 201: described('The statement frozen at closing', StatementSchema), ...errorResponses },
      },
    },
    async (request, reply) => {
      const statement = await closePeriod({
        ctx: orgCtx(app, request),
        month: request.params.month,
        reason: request.body.reason,
      });
      return reply.code(201).send(statement);
    },
  );

  app.post<{ Params: Params; Body: Body }>(
    '/v1/periods/:month/reopen',
    {
      config,
      schema: {
        ...base,
        operationId: 'reopenPeriod',
        summary: 'Reopen a closed month; its statement is kept in the history',
        body: ReasonBody,
        response: {
          200: described('The statement that was in force, now reopened', StatementSchema),
          ...errorResponses,
        },
      },
    },
    async (request) =>
      reopenPeriod({
        ctx: orgCtx(app, request),
        month: request.params.month,
        reason: request.body.reason,
      }),
  );

  app.get<{ Params: Params; Querystring: Static<typeof StatementQuery> }>(
    '/v1/periods/:month',
    {
      config,
      schema: {
        ...base,
        operationId: 'getPeriod',
        summary: "A month's status and its statement; CSV with format=csv",
        querystring: StatementQuery,
        response: {
          200: {
            description: 'The statement; CSV with format=csv',
            content: { 'application/json': { schema: PeriodSchema }, 'text/csv': { schema: CsvSchema } },
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const period = await getPeriod({ ctx: orgCtx(app, request), month: request.params.month });
      if (request.query.format !== 'csv') return period;
      return reply.type(CSV_TYPE).send(statementCsv(period));
    },
  );

  app.get<{ Params: Params }>(
    '/v1/periods/:month/statement.csv',
    {
      config,
      schema: {
        ...base,
        operationId: 'getPeriodStatementCsv',
        summary: "The month's statement as a CSV download",
        response: {
          200: { description: 'The statement as CSV', content: { 'text/csv': { schema: CsvSchema } } },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const period = await getPeriod({ ctx: orgCtx(app, request), month: request.params.month });
      return reply
        .type(CSV_TYPE)
        .header('Content-Disposition', `attachment; filename="tally-statement-${period.month}.csv"`)
        .send(statementCsv(period));
    },
  );

  app.get<{ Params: Params }>(
    '/v1/periods/:month/statements',
    {
      config,
      schema: {
        ...base,
        operationId: 'listPeriodStatements',
        summary: 'Every statement of the month, newest first (reopened ones included)',
        response: { 200: described('The statements', StatementListSchema), ...errorResponses },
      },
    },
    async (request) => ({
      data: await listStatements({ ctx: orgCtx(app, request), month: request.params.month }),
    }),
  );

  app.get<{ Params: Params }>(
    '/v1/periods/:month/changes',
    {
      config,
      schema: {
        ...base,
        operationId: 'getPeriodChanges',
        summary:
          'What changed the month since its statement: the live figures, the difference and its entries',
        response: { 200: described('The changes since closing', ChangesSchema), ...errorResponses },
      },
    },
    async (request) => periodChanges({ ctx: orgCtx(app, request), month: request.params.month }),
  );
}
