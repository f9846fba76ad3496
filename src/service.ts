import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import type { ServiceCtx } from './context.js';
import { withSecretBox } from './crypto/secret-keys.js';
import { buildApp } from './app.js';
import { issueFirstOwnerLink } from './accounts/tokens.js';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from './http/rate-limit.js';
import { countOrganizations, createOrganization } from './orgs/organizations.js';
import { migrateStorage, openStorage, takeSqliteWriteLock, type Storage } from './storage/db.js';
import { FoldStage } from './fold/stage.js';
import { foldThreadFor } from './fold/thread.js';
import { resealWebhookSecrets } from './webhooks/secret-storage.js';
import { DeliveryWorker } from './webhooks/worker.js';
import { RestatementSweeper } from './assumptions/restatements.js';
import { HeldSpanSweeper } from './otlp/sweeper.js';
import { onTrackCommitted } from './tracking/track.js';

export function createRateLimiter(
  config: Config,
  warn: (message: string, error?: unknown) => void = () => undefined,
): RateLimiter {
  return config.redisUrl
    ? new RedisRateLimiter(config.redisUrl, { timeoutMs: config.redisTimeoutMs, warn })
    : new MemoryRateLimiter();
}

/**
 * On an empty database, creates the `default` organisation (Enterprise, EUR) and returns its
 * API key so start-up can print it once (with the first owner's link); null when organisations
 * exist already.
 */
export async function bootstrapDefaultOrganization(
  ctx: ServiceCtx,
): Promise<{ apiKey: string; orgId: string } | null> {
  // Two processes starting on one empty database: the first creates it, the other waits, then
  // counts it. PostgreSQL: an advisory lock per schema for the transaction; SQLite: the write
  // lock, taken before the count.
  return ctx.db.transaction().execute(async (trx) => {
    if (ctx.engine === 'postgres') {
      await sql`SELECT pg_advisory_xact_lock(hashtext('tally_bootstrap:' || current_schema()))`.execute(trx);
    } else {
      await takeSqliteWriteLock(trx);
    }
    const inTrx = { ...ctx, db: trx };
    if ((await countOrganizations({ ctx: inTrx })) > 0) return null;
    const created = await createOrganization({
      ctx: inTrx,
      input: { name: 'default', plan: 'enterprise', currency: 'EUR' },
    });
    return { apiKey: created.api_key, orgId: created.org.id };
  });
}

export interface RunningService {
  app: FastifyInstance | null;
  storage: Storage;
  worker: DeliveryWorker | null;
  fold: FoldStage | null;
  stop(): Promise<void>;
}

export async function startService(configured: Config, clock: Clock = systemClock): Promise<RunningService> {
  // Before anything opens: without a key for the secrets at rest, nothing starts.
  const config = withSecretBox(configured);
  let app: FastifyInstance | null = null;
  // The HTTP logger once the app exists; stderr for a worker-only process.
  const log = (level: 'warn' | 'error', message: string, error?: unknown) => {
    if (app) app.log[level]({ err: error }, message);
    else if (config.logLevel !== 'silent') {
      const reason = error instanceof Error ? `: ${error.message}` : '';
      process.stderr.write(`${message}${reason}\n`);
    }
  };
  const storage = openStorage(config.databaseUrl, {
    timeouts: config.database,
    onConnectionError: (error) => log('warn', 'database connection lost', error),
  });
  await migrateStorage(storage, config.databaseUrl, { timeouts: config.database });
  const ctx: ServiceCtx = { db: storage.db, engine: storage.engine, clock, config, storage };
  // Rows from before secrets were encrypted are sealed before the worker reads any.
  await resealWebhookSecrets(ctx, { only: 'plaintext' });
  const bootstrapKey = await bootstrapDefaultOrganization(ctx);
  if (bootstrapKey) {
    const orgId = bootstrapKey.orgId;
    const link = await issueFirstOwnerLink(ctx, orgId);
    process.stdout.write(
      `Created organisation "default" (plan enterprise). Its API key, shown only this once:\n\n  ${bootstrapKey.apiKey}\n\n` +
        `Create its first owner's account (e-mail and password) with this one-time link, valid for 7 days:\n\n  ${link}\n\n`,
    );
  }

  const rateLimiter = createRateLimiter(config, (message, error) => log('warn', message, error));
  // A SQLite file folds in a thread of its own (fold/thread.ts), ready before the first request.
  // A thread that cannot start fails the stage's passes, which report it and retry.
  const foldThread = config.role === 'api' ? null : foldThreadFor(ctx, config.databaseUrl, storage.db);
  await foldThread?.start().catch(() => undefined);
  // TALLY_ROLE=api leaves folding, deliveries, e-mail and digests to `tally worker` processes. The
  // stage is made before the app (whose /metrics counts its failed passes) and starts after it.
  const fold =
    config.role === 'api'
      ? null
      : new FoldStage(ctx, {
          ...(foldThread ? { runPass: (pass) => foldThread.run(pass) } : {}),
          // Once per distinct failure: the stage retries with a growing wait, and every failed
          // pass counts in /metrics (tally_fold_errors_total).
          onError: (error) => log('error', 'folding stage: a pass failed; retrying with backoff', error),
          onRecover: (failures) =>
            log('warn', `folding stage: folding again after ${failures} failed passes`),
        });
  // Local tracking wakes an idle stage at once rather than at its next poll.
  const stopWaking = fold
    ? onTrackCommitted({ db: storage.db, storage }, () => fold.wake())
    : () => undefined;
  if (config.role !== 'worker') {
    app = await buildApp({ storage, config, clock, rateLimiter, fold });
    await app.listen({ host: config.host, port: config.port });
  }

  let worker: DeliveryWorker | null = null;
  let otlpSweeper: HeldSpanSweeper | null = null;
  let restatementSweeper: RestatementSweeper | null = null;
  if (config.role !== 'api') {
    fold?.start();
    worker = new DeliveryWorker(ctx, {
      onError: (error, what) => log('error', `webhook worker: ${what} failed`, error),
    });
    worker.start();
    otlpSweeper = new HeldSpanSweeper(ctx, {
      onError: (error) => log('error', 'OpenTelemetry sweeper failed', error),
    });
    otlpSweeper.start();
    restatementSweeper = new RestatementSweeper(ctx, {
      onError: (error) => log('error', 'restatements: finishing one failed; retrying in a minute', error),
    });
    restatementSweeper.start();
  }

  return {
    app,
    storage,
    worker,
    fold,
    // Fastify's close stops accepting, lets in-flight requests finish, then resolves. A client
    // that never finishes its request must not hold shutdown: after TALLY_SHUTDOWN_TIMEOUT_MS
    // the connections still open are closed (their requests were never acknowledged).
    async stop() {
      if (app) {
        const server = app.server;
        const deadline = setTimeout(() => {
          log('warn', 'shutdown deadline reached; closing the connections still open');
          server.closeAllConnections();
        }, config.shutdownTimeoutMs);
        try {
          await app.close();
        } finally {
          clearTimeout(deadline);
        }
      }
      stopWaking();
      if (fold) await fold.stop();
      if (foldThread) await foldThread.close();
      if (worker) await worker.stop();
      if (otlpSweeper) await otlpSweeper.stop();
      if (restatementSweeper) await restatementSweeper.stop();
      await rateLimiter.close();
      await storage.close();
    },
  };
}
