import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { ManualClock } from '../../src/clock.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { OrgCtx, ServiceCtx } from '../../src/context.js';
import type { PlanName } from '../../src/billing/plans.js';
import { buildApp } from '../../src/app.js';
import { FoldStage, type FoldStageOptions } from '../../src/fold/stage.js';
import { MemoryRateLimiter, type RateLimiter } from '../../src/http/rate-limit.js';
import { createOrganization, getOrganization } from '../../src/orgs/organizations.js';
import type { Engine } from '../../src/storage/db.js';
import { onTrackCommitted } from '../../src/tracking/track.js';
import { createTestStorage, type TestStorage } from './engines.js';
import { foldOnCommit } from './fold-inline.js';
import { TEST_SECRET_KEY } from './secret-key.js';
import { unlimited } from '../reports/unlimited.js';
import { watchResponses } from './openapi.js';

export interface TestOrg {
  id: string;
  apiKey: string;
  keyId: string;
}

export interface Harness {
  engine: Engine;
  app: FastifyInstance;
  storage: TestStorage;
  clock: ManualClock;
  config: Config;
  ctx: ServiceCtx;
  /**
   * The app's folding stage (its failed passes show in /metrics), never started by the harness:
   * it folds inside each track call (`foldInline`), or when a test says so.
   */
  stage: FoldStage;
  org: TestOrg;
  /** Creates another organisation with its own key. */
  createOrg(input?: {
    plan?: PlanName;
    currency?: string;
    hourlyRate?: number;
    adminEmails?: string[];
  }): Promise<TestOrg>;
  orgCtx(org?: TestOrg): Promise<OrgCtx>;
  /** `app.inject` with the organisation's key (or `apiKey`) as Bearer token. */
  request(options: InjectOptions & { apiKey?: string | null }): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  plan?: PlanName;
  currency?: string;
  now?: string;
  env?: Record<string, string>;
  /**
   * Each track call folds the events committed so far before it answers (the default), so
   * tests may read the rollups, usage counts and webhook messages right after tracking; false
   * for tests of the tail, which fold at chosen points (tracking then only wakes `stage`).
   */
  foldInline?: boolean;
  /** Options of the harness's folding stage. */
  stage?: FoldStageOptions;
  rateLimiter?: RateLimiter;
  /** Where the app's logs go, at level info; none when unset. */
  logStream?: { write(line: string): void };
}

/**
 * A harness at the fixed instant `nowMs`, without rate limits, whose folding stage runs only when
 * a test calls it (`foldInline: false`): for tests that fold at chosen points.
 */
export function pausedStageOptions(nowMs: number): HarnessOptions {
  return { now: new Date(nowMs).toISOString(), rateLimiter: unlimited, foldInline: false };
}

/** A fresh app on a fresh database with one organisation and key, per test file or test. */
export async function createHarness(engine: Engine, options: HarnessOptions = {}): Promise<Harness> {
  const storage = await createTestStorage(engine);
  const clock = new ManualClock(options.now ?? '2026-11-20T12:00:00.000Z');
  const config = loadConfig({ TALLY_LOG_LEVEL: 'silent', TALLY_SECRET_KEY: TEST_SECRET_KEY, ...options.env });
  const ctx: ServiceCtx = { db: storage.db, engine, clock, config, storage };
  const stage = new FoldStage(ctx, options.stage);
  const stopFolding =
    options.foldInline === false ? onTrackCommitted(ctx, () => stage.wake()) : foldOnCommit(ctx, stage);
  const app = await buildApp(
    { storage, config, clock, rateLimiter: options.rateLimiter ?? new MemoryRateLimiter(), fold: stage },
    { logger: options.logStream ? { level: 'info', stream: options.logStream } : false },
  );
  // Every answer of every test must be one the OpenAPI document declares (checked at close()).
  const watched = watchResponses(app);

  const createOrg: Harness['createOrg'] = async (input = {}) => {
    const created = await createOrganization({
      ctx,
      input: {
        name: 'Acme',
        plan: input.plan ?? options.plan ?? 'pro',
        currency: input.currency ?? options.currency,
        ...input,
      },
    });
    return { id: created.org.id, apiKey: created.api_key, keyId: created.key.id };
  };
  const org = await createOrg();

  return {
    engine,
    app,
    storage,
    clock,
    config,
    ctx,
    stage,
    org,
    createOrg,
    async orgCtx(which = org) {
      return { ...ctx, org: await getOrganization({ ctx, id: which.id }), actorKeyId: which.keyId };
    },
    request({ apiKey, headers, ...rest }) {
      const key = apiKey === undefined ? org.apiKey : apiKey;
      return app.inject({
        ...rest,
        headers: { ...(key === null ? {} : { authorization: `Bearer ${key}` }), ...headers },
      });
    },
    async close() {
      const violations = watched.violations();
      await app.close();
      stopFolding();
      await stage.stop();
      await storage.destroy();
      if (violations.length > 0) {
        throw new Error(
          `Answers the OpenAPI document does not declare: ${JSON.stringify(violations.slice(0, 5))}`,
        );
      }
    },
  };
}
