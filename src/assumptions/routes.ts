import type { FastifyInstance } from 'fastify';
import type { Static } from '@sinclair/typebox';
import { orgCtx } from '../http/app-types.js';
import { described, errorResponses } from '../http/schemas.js';
import { checkChange } from './change-input.js';
import { historyFor } from './history.js';
import { previewChange } from './preview.js';
import { getRestatement, restate } from './restatements.js';
import {
  ChangeBody,
  HistoryListSchema,
  HistoryQuery,
  PreviewSchema,
  RestatementBody,
  RestatementParams,
  RestatementSchema,
} from './schema.js';
import { versionView } from './view.js';

const tags = ['assumptions'];

export function registerAssumptionRoutes(app: FastifyInstance): void {
  app.get<{ Querystring: Static<typeof HistoryQuery> }>(
    '/v1/assumptions/history',
    {
      schema: {
        tags,
        operationId: 'listAssumptionHistory',
        summary: 'Every version of the baselines, rates and credits, newest recorded first',
        querystring: HistoryQuery,
        response: { 200: described('The versions, with their dates', HistoryListSchema), ...errorResponses },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const { kind, key, limit = 50, cursor } = request.query;
      const history = await historyFor(ctx.db, ctx.org.id, ctx.org.assumptionsRevision);
      const now = ctx.clock.now().getTime();
      // The cursor is the revision of the last version of the previous page.
      const below = cursor === undefined ? Infinity : Number(cursor);
      const matching = [...history.versions]
        .filter((v) => (kind === undefined || v.kind === kind) && (key === undefined || v.key === key))
        .filter((v) => v.revision < below)
        .sort((a, b) => b.revision - a.revision);
      const page = matching.slice(0, limit);
      const last = page[page.length - 1];
      return {
        data: page.map((v) => versionView(history, v, now)),
        next_cursor: matching.length > limit && last ? String(last.revision) : null,
      };
    },
  );

  app.post<{ Body: Static<typeof ChangeBody> }>(
    '/v1/restatements/preview',
    {
      schema: {
        tags,
        operationId: 'previewRestatement',
        summary: 'Dry run of a change of an assumption: the events it moves and the months before and after',
        body: ChangeBody,
        response: {
          200: described('What the change would move; nothing is written', PreviewSchema),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const change = await checkChange(ctx, request.body);
      const preview = await previewChange({ ctx, change });
      return { restatement: change.effectiveFrom < ctx.clock.now().getTime(), ...preview };
    },
  );

  app.post<{ Body: Static<typeof RestatementBody> }>(
    '/v1/restatements',
    {
      schema: {
        tags,
        operationId: 'applyRestatement',
        summary: 'Apply a change of an assumption from a past date, with a reason',
        body: RestatementBody,
        response: {
          201: described('Applied: the restatement and the version it recorded', RestatementSchema),
          202: described(
            'Recorded and being applied in the background (a large organisation): poll GET /v1/restatements/{id}',
            RestatementSchema,
          ),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const view = await restate({
        ctx: orgCtx(app, request),
        input: request.body,
        onBackgroundError: (error) =>
          app.log.error({ err: error }, 'restatement: applying failed; it resumes'),
      });
      return reply.code(view.status === 'applied' ? 201 : 202).send(view);
    },
  );

  app.get<{ Params: Static<typeof RestatementParams> }>(
    '/v1/restatements/:restatement_id',
    {
      schema: {
        tags,
        operationId: 'getRestatement',
        summary: 'A restatement: its status while it is applied, and the version it recorded',
        params: RestatementParams,
        response: { 200: described('The restatement', RestatementSchema), ...errorResponses },
      },
    },
    async (request) => getRestatement({ ctx: orgCtx(app, request), id: request.params.restatement_id }),
  );
}
