import type { FastifyInstance } from 'fastify';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import type { ServiceCtx } from './context.js';
import { buildApp } from './http/server.js';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from './http/rate-limit.js';
import { countOrganizations, createOrganization } from './orgs/organizations.js';
import { migrateToLatest, openStorage, type Storage } from './storage/db.js';
import { foldStageFor, type FoldStage } from './tracking/fold.js';
import { DeliveryWorker } from './webhooks/worker.js';

export function createRateLimiter(config: Config): RateLimiter {
  return config.redisUrl ? new RedisRateLimiter(config.redisUrl) : new MemoryRateLimiter();
}

/**
 * On an empty database, creates the `default` organisation (Enterprise, EUR) and returns its
 * API key so start-up can print it once; null when organisations exist already.
 */
export async function bootstrapDefaultOrganization(ctx: ServiceCtx): Promise<string | null> {
  if ((await countOrganizations({ ctx })) > 0) return null;
  const created = await createOrganization({
    ctx,
    input: { name: 'default', plan: 'enterprise', currency: 'EUR' },
  });
  return created.api_key;
}

export interface RunningService {
  app: FastifyInstance | null;
  storage: Storage;
  worker: DeliveryWorker | null;
  fold: FoldStage | null;
  stop(): Promise<void>;
}

export async function startService(config: Config, clock: Clock = systemClock): Promise<RunningService> {
  const storage = openStorage(config.databaseUrl);
  await migrateToLatest(storage.db);
  const ctx: ServiceCtx = { db: storage.db, engine: storage.engine, clock, config };
  const bootstrapKey = await bootstrapDefaultOrganization(ctx);
  if (bootstrapKey) {
    process.stdout.write(
      `Created organisation "default" (plan enterprise). Its API key, shown only this once:\n\n  ${bootstrapKey}\n\n`,
    );
  }

  const rateLimiter = createRateLimiter(config);
  let app: FastifyInstance | null = null;
  if (config.role !== 'worker') {
    app = await buildApp({ storage, config, clock, rateLimiter });
    await app.listen({ host: config.host, port: config.port });
  }

  // TALLY_ROLE=api leaves folding, deliveries, e-mail and digests to `tally worker` processes.
  let worker: DeliveryWorker | null = null;
  let fold: FoldStage | null = null;
  if (config.role !== 'api') {
    const log = app?.log;
    fold = foldStageFor(ctx, {
      onError: (error) => {
        if (log) log.error({ err: error }, 'folding stage: a pass failed');
        else process.stderr.write(`folding stage: a pass failed: ${(error as Error).message}\n`);
      },
    });
    fold.start();
    worker = new DeliveryWorker(ctx, {
      onError: (error, what) => {
        if (log) log.error({ err: error }, `webhook worker: ${what} failed`);
        else process.stderr.write(`webhook worker: ${what} failed: ${(error as Error).message}\n`);
      },
    });
    worker.start();
  }

  return {
    app,
    storage,
    worker,
    fold,
    // Fastify's close stops accepting, lets in-flight requests finish, then resolves.
    async stop() {
      if (app) await app.close();
      if (fold) await fold.stop();
      if (worker) await worker.stop();
      await rateLimiter.close();
      await storage.close();
    },
  };
}
