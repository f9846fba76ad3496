import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requirePlan } from '../billing/plans.js';
import { AppError } from '../errors.js';
import { authenticate, noteKeyUse } from '../orgs/authenticator.js';
import type { RateDecision } from './rate-limit.js';

export function setRateHeaders(reply: FastifyReply, decision: RateDecision): void {
  reply.header('RateLimit-Limit', String(decision.limit));
  reply.header('RateLimit-Remaining', String(decision.remaining));
  reply.header('RateLimit-Reset', String(decision.resetSeconds));
}

/**
 * Takes `cost` units of the key's per-second budget. A Redis outage must not take tracking
 * down with it, so the limiter failing lets the request through (and logs why).
 */
export async function consumeRate(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  rateClass: 'track' | 'other',
  cost: number,
): Promise<number> {
  const auth = request.auth;
  if (!auth) return cost;
  const plan = app.tally.config.plans[auth.org.plan];
  const limit = rateClass === 'track' ? plan.track_rate_per_second : plan.other_rate_per_second;
  let decision: RateDecision;
  try {
    decision = await app.tally.rateLimiter.consume(
      `${auth.keyId}:${rateClass}`,
      limit,
      cost,
      app.tally.clock.now().getTime(),
    );
  } catch (error) {
    request.log.warn({ err: error }, 'rate limiter unavailable; request let through');
    return cost;
  }
  setRateHeaders(reply, decision);
  return decision.granted;
}

/** What an `ingest` key may call (DESIGN §3), by method and route pattern. */
const INGEST_ROUTES = new Set([
  'POST /v1/track',
  'POST /v1/track/batch',
  'GET /v1/task-types',
  'POST /v1/traces',
]);

/**
 * The order of DESIGN §2: authentication → scope → rate limit → plan gate, before any body is
 * read. The scope comes before the rate limit so an ingest key's refused calls do not spend the
 * budget its tracking needs.
 */
export function registerAuth(app: FastifyInstance): void {
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (request, reply) => {
    const header = request.headers.authorization;
    if (header === undefined || header === '') {
      throw new AppError('missing_authorization', 'Send Authorization: Bearer <API key>.');
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) throw new AppError('invalid_api_key', 'The API key is malformed or unknown.');
    const { storage } = app.tally;
    request.auth = await authenticate({ ctx: { db: storage.db, storage }, token: match[1] });
    if (
      request.auth.scope !== 'admin' &&
      !INGEST_ROUTES.has(`${request.method} ${request.routeOptions.url}`)
    ) {
      throw new AppError(
        'insufficient_scope',
        'This ingest key may only track events, export traces and list task types.',
      );
    }
    noteKeyUse({ db: storage.db, clock: app.tally.clock }, request.auth.keyId);

    const config = request.routeOptions.config;
    const rateClass = config.rateClass ?? 'other';
    if (rateClass !== 'none') {
      const granted = await consumeRate(app, request, reply, rateClass, 1);
      if (granted < 1)
        throw new AppError('rate_limited', 'Too many requests for this API key; retry in a second.');
    }
    if (config.plan) requirePlan(request.auth.org.plan, config.plan);
  });
}
