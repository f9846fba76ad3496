import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queueEmails } from '../../src/email/outbox.js';
import { sendDueEmails, type MailTransport } from '../../src/email/sender.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';

describe.each(ENGINES)('e-mail sending (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  it('sends each e-mail once when sends in a row outlast one lease and a second worker runs meanwhile', async () => {
    await queueEmails({
      db: h.ctx.db,
      at: h.clock.now(),
      emails: [1, 2, 3].map((i) => ({ orgId: null, to: `admin${i}@acme.test`, subject: `s${i}`, body: 'b' })),
    });
    const sent: string[] = [];
    const workerB: MailTransport = {
      close: () => undefined,
      sendMail: async (m) => void sent.push(`B:${m.to}`),
    };
    // Each send of worker A takes 70 s, inside the 120 s lease; two in a row take longer.
    const workerA: MailTransport = {
      close: () => undefined,
      sendMail: async (m) => {
        sent.push(`A:${m.to}`);
        h.clock.advance(70_000);
        if (sent.filter((s) => s.startsWith('A:')).length === 2) {
          await sendDueEmails({ ctx: h.ctx, transport: workerB });
        }
      },
    };
    await sendDueEmails({ ctx: h.ctx, transport: workerA });
    const recipients = sent.map((s) => s.slice(2)).sort();
    expect(recipients).toEqual(['admin1@acme.test', 'admin2@acme.test', 'admin3@acme.test']);
    const rows = await h.ctx.db.selectFrom('emails').select(['status', 'attempts']).execute();
    expect(rows.map((r) => [r.status, Number(r.attempts)])).toEqual([
      ['sent', 1],
      ['sent', 1],
      ['sent', 1],
    ]);
  });
});
