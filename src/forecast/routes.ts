import type { FastifyInstance } from 'fastify';
import type { Static } from '@sinclair/typebox';
import { orgCtx } from '../http/app-types.js';
import { described, errorResponses } from '../http/schemas.js';
import { reportInput } from '../reports/input.js';
import { buildForecast, forecastView } from './forecast.js';
import { ForecastQuery, ForecastSchema } from './schema.js';

export function registerForecastRoutes(app: FastifyInstance): void {
  app.get<{ Querystring: Static<typeof ForecastQuery> }>(
    '/v1/reports/forecast',
    {
      config: { plan: 'pro' },
      schema: {
        tags: ['reports'],
        operationId: 'getForecast',
        summary:
          "This month's events, agent cost, cost saved and net saved projected to its end, with a band",
        querystring: ForecastQuery,
        response: {
          200: described(
            'The forecast, the method in a sentence and the figures it rests on',
            ForecastSchema,
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const { filters } = reportInput(request.query, { sort: 'events' });
      const forecast = await buildForecast({ ctx, filters });
      return forecastView(forecast, ctx.org.currency, filters);
    },
  );
}
