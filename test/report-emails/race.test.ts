import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueDueReportEmails } from '../../src/report-emails/send.js';
import { openStorage, type Storage } from '../../src/storage/db.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';

const RECIPIENTS = Array.from({ length: 12 }, (_, i) => `reader${i}@acme.test`);

/**
 * Schedulers racing for one period: every recipient's e-mail is queued once. On PostgreSQL the
 * second scheduler has connections of its own (another process's worth); SQLite has one writer,
 * so there they share the connection and interleave at every await (as in test/alerts).
 */
describe.each(ENGINES)('report e-mails from schedulers racing (%s)', (engine) => {
  let h: Harness;
  let second: Storage | null = null;
  beforeAll(async () => {
    h = await createHarness(engine, { now: '2026-11-22T12:00:00.000Z', rateLimiter: unlimited });
    if (engine === 'postgres') second = openStorage(h.storage.url, { schema: h.storage.schema, poolSize: 5 });
  });
  afterAll(async () => {
    await second?.close();
    await h.close();
  });

  it('queues each recipient once per period', async () => {
    const created = await h.request({
      method: 'POST',
      url: '/v1/report-schedules',
      payload: { frequency: 'weekly', recipients: RECIPIENTS },
    });
    expect(created.statusCode).toBe(201);
    // A second schedule naming some of the same people: still one e-mail each.
    await h.request({
      method: 'POST',
      url: '/v1/report-schedules',
      payload: { frequency: 'weekly', recipients: RECIPIENTS.slice(0, 4) },
    });
    h.clock.set('2026-11-23T09:30:00.000Z');
    const other = second ? { ...h.ctx, db: second.db } : h.ctx;
    const queued = await Promise.all([
      queueDueReportEmails({ ctx: h.ctx }),
      queueDueReportEmails({ ctx: other }),
      queueDueReportEmails({ ctx: h.ctx }),
    ]);
    expect(queued.flat().sort()).toEqual([...RECIPIENTS].sort());
    const emails = await h.ctx.db.selectFrom('emails').select('to_address').execute();
    expect(emails.map((e) => e.to_address).sort()).toEqual([...RECIPIENTS].sort());
  });
});
