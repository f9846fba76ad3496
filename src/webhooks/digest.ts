import type { ServiceCtx } from '../context.js';
import { getOrganization } from '../orgs/organizations.js';
import { digestPayload } from './digest-payload.js';
import { enqueueMessage } from './outbox.js';

const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;
const SEND_OFFSET_MS = 9 * 3_600_000;
/** After downtime, digests are caught up for at most this many missed weeks. */
export const MAX_CATCH_UP_WEEKS = 4;

export interface DigestWeek {
  /** Monday 00:00 UTC starting the digested ISO week; also its key (YYYY-MM-DD). */
  from: Date;
  to: Date;
  /** Monday 09:00 UTC after the week: when its digest is due. */
  sendAt: Date;
  key: string;
}

/** The weeks whose digest is due at `now`, newest first (at most MAX_CATCH_UP_WEEKS). */
export function dueDigestWeeks(now: Date): DigestWeek[] {
  const midnight = Math.floor(now.getTime() / DAY_MS) * DAY_MS;
  const sinceMonday = (new Date(midnight).getUTCDay() + 6) % 7;
  let monday = midnight - sinceMonday * DAY_MS;
  if (monday + SEND_OFFSET_MS > now.getTime()) monday -= WEEK_MS;
  return Array.from({ length: MAX_CATCH_UP_WEEKS }, (_, k) => {
    const to = monday - k * WEEK_MS;
    const from = new Date(to - WEEK_MS);
    return {
      from,
      to: new Date(to),
      sendAt: new Date(to + SEND_OFFSET_MS),
      key: from.toISOString().slice(0, 10),
    };
  });
}

/**
 * Queues every due weekly digest not queued yet: one per webhook subscribed to `weekly.digest`
 * (since before the send time) and not deactivated, per week. This is the scheduler's rule: it
 * never sends a week that was due before the webhook subscribed. Returns what this call queued.
 */
export async function queueDueDigests({ ctx }: { ctx: ServiceCtx }) {
  const weeks = dueDigestWeeks(ctx.clock.now());
  const latest = weeks[0];
  if (!latest) return [];
  return queueDigests({ ctx, weeks, subscribedBy: latest.sendAt });
}

/**
 * `tally digests send --at`: queues only the week that is due at `at` (the latest one), for every
 * webhook subscribed to `weekly.digest` now and not deactivated, including one that subscribed
 * after that time (an admin can show a new subscriber last week's digest). Never twice to one
 * webhook: the same `(webhook_id, week)` claim as the scheduler's.
 */
export async function queueDigestWeekAt({ ctx, at }: { ctx: ServiceCtx; at: Date }) {
  const week = dueDigestWeeks(at)[0];
  if (!week) return [];
  return queueDigests({ ctx, weeks: [week], subscribedBy: null });
}

/**
 * Queues `weeks` for the subscribed webhooks (those subscribed by `subscribedBy` for each week's
 * send time when it is set; every current subscriber when it is null). The `(webhook_id, week)`
 * row is inserted in the message's transaction and is unique, so two schedulers (or `tally
 * digests send`) racing on one database queue it once.
 */
async function queueDigests({
  ctx,
  weeks,
  subscribedBy,
}: {
  ctx: ServiceCtx;
  weeks: DigestWeek[];
  subscribedBy: Date | null;
}) {
  let query = ctx.db
    .selectFrom('webhooks')
    .select(['id', 'org_id', 'digest_since'])
    .where('deleted_at', 'is', null)
    .where('status', '<>', 'deactivated')
    .where('digest_since', 'is not', null);
  if (subscribedBy !== null) query = query.where('digest_since', '<=', subscribedBy.getTime());
  const hooks = await query.execute();
  if (hooks.length === 0) return [];
  const done = await ctx.db
    .selectFrom('digest_runs')
    .select(['webhook_id', 'week'])
    .where(
      'webhook_id',
      'in',
      hooks.map((h) => h.id),
    )
    .where(
      'week',
      'in',
      weeks.map((w) => w.key),
    )
    .execute();
  const isDone = new Set(done.map((d) => `${d.webhook_id} ${d.week}`));
  const payloads = new Map<string, unknown>();
  const queued: Array<{ webhook_id: string; week: string; message_id: string }> = [];

  for (const hook of hooks) {
    for (const week of weeks) {
      if (isDone.has(`${hook.id} ${week.key}`)) continue;
      if (subscribedBy !== null && Number(hook.digest_since) > week.sendAt.getTime()) continue;
      const cacheKey = `${hook.org_id} ${week.key}`;
      let payload = payloads.get(cacheKey);
      if (payload === undefined) {
        const org = await getOrganization({ ctx, id: hook.org_id });
        payload = await digestPayload({
          db: ctx.db,
          orgId: org.id,
          currency: org.currency,
          from: week.from,
          to: week.to,
        });
        payloads.set(cacheKey, payload);
      }
      const messageId = await ctx.db.transaction().execute(async (trx) => {
        const at = ctx.clock.now();
        const claim = await trx
          .insertInto('digest_runs')
          .values({ webhook_id: hook.id, week: week.key, message_id: '', created_at: at.getTime() })
          .onConflict((oc) => oc.columns(['webhook_id', 'week']).doNothing())
          .executeTakeFirst();
        if (Number(claim.numInsertedOrUpdatedRows ?? 0) === 0) return null;
        const { messageId: id } = await enqueueMessage({
          db: trx,
          orgId: hook.org_id,
          type: 'weekly.digest',
          payload,
          webhookIds: [hook.id],
          at,
          firstDelaySeconds: ctx.config.webhookRetryDelaysSeconds[0] ?? 0,
        });
        await trx
          .updateTable('digest_runs')
          .set({ message_id: id })
          .where('webhook_id', '=', hook.id)
          .where('week', '=', week.key)
          .execute();
        return id;
      });
      if (messageId !== null) queued.push({ webhook_id: hook.id, week: week.key, message_id: messageId });
    }
  }
  return queued;
}
