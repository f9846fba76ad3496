import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { OrgCtx, ServiceCtx } from '../context.js';
import { AppError } from '../errors.js';
import type { PlanName } from '../billing/plans.js';
import type { Authenticated } from '../orgs/authenticator.js';
import type { Storage } from '../storage/db.js';
import type { RateLimiter } from './rate-limit.js';
import type { Metrics } from './metrics.js';
import type { IngestGate } from '../fold/ingest-gate.js';
import type { FoldStage } from '../fold/stage.js';

export interface AppDeps {
  storage: Storage;
  config: Config;
  clock: Clock;
  rateLimiter: RateLimiter;
  /** This process's folding stage, when it runs one: /metrics counts its failed passes. */
  fold?: FoldStage | null;
}

export type RateClass = 'track' | 'other' | 'none';

declare module 'fastify' {
  interface FastifyRequest {
    auth: Authenticated | null;
  }
  interface FastifyContextConfig {
    /** Lowest plan that may call the route (403 plan_upgrade_required below it). */
    plan?: PlanName;
    /** Which per-key rate applies; `none` when the handler counts itself (batch). */
    rateClass?: RateClass;
    /** A body field whose array items the handler checks one by one (the batch's `events`). */
    itemsAt?: string;
  }
  interface FastifyInstance {
    tally: AppDeps;
    metrics: Metrics;
    /** Holds backfill batches while the folding stage is too far behind; null when off. */
    ingestGate: IngestGate | null;
  }
}

export function serviceCtx(deps: AppDeps): ServiceCtx {
  const { storage } = deps;
  return { db: storage.db, engine: storage.engine, clock: deps.clock, config: deps.config, storage };
}

/**
 * The verb context of an authenticated request. A GET reads on the read connection of a SQLite
 * file (Storage.reader), so that it does not wait for a folding pass holding the write
 * connection; other methods write, on the write connection.
 */
export function orgCtx(app: FastifyInstance, request: FastifyRequest): OrgCtx {
  const auth = request.auth;
  if (!auth) throw new AppError('missing_authorization', 'Send Authorization: Bearer <API key>.');
  // Built field by field (every request makes one): spreads cost more on this path.
  const { storage, clock, config } = app.tally;
  const db = request.method === 'GET' ? (storage.reader ?? storage.db) : storage.db;
  return {
    db,
    engine: storage.engine,
    clock,
    config,
    storage,
    org: auth.org,
    actorKeyId: auth.keyId,
  };
}
