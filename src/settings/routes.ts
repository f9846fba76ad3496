import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { historyFor, loadHistory } from '../assumptions/history.js';
import { organizationAt, organizationSlots } from '../assumptions/changes.js';
import { AssumptionVersionSchema, EffectiveFrom } from '../assumptions/schema.js';
import { historyView } from '../assumptions/view.js';
import { CATEGORIES } from '../catalogue/categories.js';
import type { AssumptionHistory } from '../assumptions/history.js';
import type { Organization } from '../orgs/organization-record.js';
import { orgCtx } from '../http/app-types.js';
import { CategorySchema } from '../catalogue/schema.js';
import { described, errorResponses, named, Nullable } from '../http/schemas.js';
import { settingsView, updateSettings } from './settings.js';
import { getPlanningSettings, planningSettingsView, updatePlanningSettings } from './planning-settings.js';

const Rate = Type.Number({ minimum: 0, maximum: 1_000_000 });
const Credit = Type.Number({ minimum: 0, maximum: 1 });

const SettingsPatchBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    currency: Type.Optional(Type.String({ pattern: '^[A-Z]{3}$' })),
    default_hourly_rate: Type.Optional(Rate),
    category_hourly_rates: Type.Optional(
      Type.Object(Object.fromEntries(CATEGORIES.map((c) => [c, Type.Optional(Rate)])), {
        additionalProperties: false,
      }),
    ),
    outcome_credit: Type.Optional(
      Type.Object(
        {
          success: Type.Optional(Credit),
          needs_review: Type.Optional(Credit),
          failure: Type.Optional(Credit),
        },
        { additionalProperties: false },
      ),
    ),
    fallback_baseline_minutes: Type.Optional(
      Type.Union([Type.Number({ exclusiveMinimum: 0, maximum: 525600 }), Type.Null()]),
    ),
    usd_exchange_rate: Type.Optional(
      Type.Union([Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 }), Type.Null()]),
    ),
    admin_emails: Type.Optional(
      Type.Array(Type.String({ format: 'email', maxLength: 254 }), { maxItems: 50 }),
    ),
    fte_hours_per_month: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 744 })),
    alert_emails: Type.Optional(
      Type.Array(Type.String({ format: 'email', maxLength: 254 }), { maxItems: 50 }),
    ),
    effective_from: Type.Optional(EffectiveFrom),
  },
  { additionalProperties: false },
);

named('SettingsPatch', SettingsPatchBody);

/** What GET and PATCH answer (DESIGN §2). */
const SettingsSchema = named(
  'Settings',
  Type.Object({
    organization_id: Type.String(),
    plan: Type.Unsafe<string>({ type: 'string', enum: ['free', 'pro', 'enterprise'] }),
    name: Type.String(),
    currency: Type.String({ description: 'ISO 4217; changeable only while the organisation has no events' }),
    default_hourly_rate: Type.Number(),
    category_hourly_rates: Type.Record(Type.String(), Type.Number(), {
      description: 'Hourly rate by task category',
      propertyNames: CategorySchema,
    }),
    outcome_credit: Type.Object({
      success: Type.Number(),
      needs_review: Type.Number(),
      failure: Type.Number(),
    }),
    fallback_baseline_minutes: Nullable(Type.Number({ description: 'null = off' })),
    usd_exchange_rate: Nullable(Type.Number({ description: 'null = the shipped reference rate' })),
    admin_emails: Type.Array(Type.String()),
    fte_hours_per_month: Type.Number({
      description: 'Working hours of one FTE in a month (payback: FTE capacity freed); default 160',
    }),
    alert_emails: Type.Array(Type.String(), {
      description: 'Admin e-mails that opted in to budget and usage alert e-mails',
    }),
    assumption_history: Type.Array(AssumptionVersionSchema, {
      description: 'Every version of the hourly rates, outcome credits and fallback baseline, with its dates',
    }),
  }),
);

/** The settings in force now, with the history of their assumptions. */
function assumptionsView(org: Organization, history: AssumptionHistory, now: number) {
  return {
    ...settingsView(organizationAt(org, history, now)),
    assumption_history: historyView(history, organizationSlots(), now),
  };
}

export function registerSettingsRoutes(app: FastifyInstance): void {
  app.get(
    '/v1/settings',
    {
      schema: {
        tags: ['settings'],
        operationId: 'getSettings',
        summary: 'Organisation settings',
        response: { 200: described("The organisation's settings", SettingsSchema), ...errorResponses },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const history = await historyFor(ctx.db, ctx.org.id, ctx.org.assumptionsRevision);
      return {
        ...assumptionsView(ctx.org, history, ctx.clock.now().getTime()),
        ...planningSettingsView(await getPlanningSettings(ctx.db, ctx.org.id)),
      };
    },
  );

  app.patch<{ Body: Static<typeof SettingsPatchBody> }>(
    '/v1/settings',
    {
      schema: {
        tags: ['settings'],
        summary: 'Change organisation settings; stored events keep the values they were computed with',
        operationId: 'updateSettings',
        body: SettingsPatchBody,
        response: { 200: described('The settings after the change', SettingsSchema), ...errorResponses },
      },
    },
    async (request) => {
      const ctx = orgCtx(app, request);
      const { fte_hours_per_month, alert_emails, ...patch } = request.body;
      // One transaction: a refused planning field leaves the other settings unchanged too.
      const { org, planning, history } = await ctx.db.transaction().execute(async (trx) => {
        const changed = await updateSettings({
          ctx: { ...ctx, db: trx },
          orgId: ctx.org.id,
          patch,
          actorKeyId: ctx.actorKeyId,
        });
        const planned = await updatePlanningSettings({
          ctx: { ...ctx, db: trx, org: changed },
          patch: { fte_hours_per_month, alert_emails },
        });
        return { org: changed, planning: planned, history: await loadHistory(trx, ctx.org.id) };
      });
      return {
        ...assumptionsView(org, history, ctx.clock.now().getTime()),
        ...planningSettingsView(planning),
      };
    },
  );
}
