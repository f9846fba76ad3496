import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { getUsage } from '../billing/usage.js';
import { orgCtx } from '../http/app-types.js';
import { described, errorResponses } from '../http/schemas.js';
import { withClosedPeriods } from '../periods/notes.js';
import type { TSchema } from '@sinclair/typebox';
import { csvText } from './csv.js';
import { reportInput, type ReportQueryString } from './input.js';
import type { Metric } from './params.js';
import { openExport } from './export.js';
import { buildReport } from './report.js';
import {
  ExportQuery,
  GroupedQuery,
  LeaderboardQuery,
  LeaderboardSchema,
  ReportSchema,
  UsageQuery,
  UsageSchema,
} from './schema.js';

const CSV_TYPE = 'text/csv; charset=utf-8';
const CsvSchema = Type.String({
  description: 'CSV document (RFC 4180, UTF-8), one line per row after the header',
});

/** A 200 that is JSON, or CSV with `format=csv`. */
const jsonOrCsv = (description: string, schema: TSchema) => ({
  description,
  content: { 'application/json': { schema }, 'text/csv': { schema: CsvSchema } },
});
type Query = ReportQueryString & { format?: 'json' | 'csv' };

function groupedRoute(
  app: FastifyInstance,
  path: string,
  sort: Metric,
  summary: string,
  operationId: string,
): void {
  app.get<{ Querystring: Query }>(
    path,
    {
      config: { plan: 'pro' },
      schema: {
        tags: ['reports'],
        operationId,
        summary,
        querystring: GroupedQuery,
        response: { 200: jsonOrCsv('The report; CSV with format=csv', ReportSchema), ...errorResponses },
      },
    },
    async (request, reply) => {
      const input = reportInput(request.query, { sort });
      const ctx = orgCtx(app, request);
      const report = await buildReport({ ctx, input });
      if (request.query.format !== 'csv') return withClosedPeriods(ctx, report);
      return reply.type(CSV_TYPE).send(await csvText(input.groupBy, report.rows));
    },
  );
}

export function registerReportRoutes(app: FastifyInstance): void {
  groupedRoute(
    app,
    '/v1/reports/time-saved',
    'hours_saved',
    'Hours and money saved, grouped',
    'getTimeSavedReport',
  );
  groupedRoute(
    app,
    '/v1/reports/cost-saved',
    'cost_saved',
    'Money saved, agent cost and net saved, grouped',
    'getCostSavedReport',
  );

  app.get<{ Querystring: Query }>(
    '/v1/reports/leaderboard',
    {
      config: { plan: 'pro' },
      schema: {
        tags: ['reports'],
        operationId: 'getLeaderboard',
        summary: 'Agents ranked by one metric',
        querystring: LeaderboardQuery,
        response: {
          200: jsonOrCsv('Agents with their rank; CSV with format=csv', LeaderboardSchema),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const input = reportInput(request.query, { sort: 'hours_saved', groupBy: ['agent'] });
      const ctx = orgCtx(app, request);
      const report = await buildReport({ ctx, input });
      const rows = report.rows.map((row, i) => ({ rank: i + 1, ...row }));
      if (request.query.format !== 'csv') return withClosedPeriods(ctx, { ...report, rows });
      const rank = { header: 'rank', cell: (row: (typeof rows)[number]) => row.rank };
      return reply.type(CSV_TYPE).send(await csvText(input.groupBy, rows, [rank]));
    },
  );

  app.get<{ Querystring: Query }>(
    '/v1/reports/export',
    {
      config: { plan: 'pro' },
      schema: {
        tags: ['reports'],
        operationId: 'exportReport',
        summary: 'The time-saved report as a streamed CSV download',
        querystring: ExportQuery,
        response: {
          200: {
            description: 'The CSV file, streamed (Content-Disposition: attachment)',
            content: { 'text/csv': { schema: CsvSchema } },
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const ctx = orgCtx(app, request);
      const input = reportInput(request.query, { sort: 'hours_saved' });
      const stamp = ctx.clock.now().toISOString().slice(0, 10).replaceAll('-', '');
      const body = await openExport({ ctx, input });
      // However the response ends (sent, failed, client gone before the first byte), the body
      // is destroyed, which closes the rows behind it.
      reply.raw.once('close', () => body.destroy());
      return reply
        .type(CSV_TYPE)
        .header('Content-Disposition', `attachment; filename="tally-export-${input.period}-${stamp}.csv"`)
        .send(body);
    },
  );

  app.get(
    '/v1/reports/usage',
    {
      schema: {
        tags: ['reports'],
        operationId: 'getUsage',
        summary: 'Events this month, included, overage and the projected overage charge',
        querystring: UsageQuery,
        response: { 200: described("This month's usage against the plan", UsageSchema), ...errorResponses },
      },
    },
    async (request) => getUsage({ ctx: orgCtx(app, request) }),
  );
}
