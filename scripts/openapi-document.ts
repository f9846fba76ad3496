import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/app.js';
import { MemoryRateLimiter } from '../src/http/rate-limit.js';
import { openStorage } from '../src/storage/db.js';

/**
 * The service's OpenAPI document, built in-process from the routes (no listening server, no
 * migrated database: the document depends on the route schemas only).
 */
export async function openApiDocument(): Promise<Record<string, unknown>> {
  const storage = openStorage('sqlite::memory:');
  const config = loadConfig({ TALLY_LOG_LEVEL: 'silent' });
  const app = await buildApp(
    { storage, config, clock: systemClock, rateLimiter: new MemoryRateLimiter() },
    { logger: false },
  );
  try {
    await app.ready();
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
    await storage.close();
  }
}
