import { performance } from 'node:perf_hooks';
import type { Agent } from 'undici';
import type { ServiceCtx } from '../context.js';
import { runScheduledChecks } from '../alerts/scheduled.js';
import { createMailTransport, sendDueEmails, type MailTransport } from '../email/sender.js';
import { randomAlnum } from '../ids.js';
import { claimDueDeliveries, findExpiredClaims, type ClaimedDelivery } from './claim.js';
import { deliverMessage, recoverExpiredClaims } from './deliver.js';
import { AttemptRecorder } from './record.js';
import { queueDueDigests } from './digest.js';
import { createDeliveryAgent } from './send.js';

export interface WorkerOptions {
  /** Attempts in flight at once in this process. */
  concurrency?: number;
  /**
   * In-flight attempts per webhook while its receiver is not known to be fast: so a slow or dead
   * receiver cannot take every slot.
   */
  perWebhook?: number;
  /**
   * In-flight attempts per webhook whose receiver answered the last one within `slowAfterMs` and
   * has left none waiting longer (default: concurrency − perWebhook, at least perWebhook): a fast receiver
   * gets the attempts a high event rate needs, and the other webhooks always keep the rest.
   */
  perFastWebhook?: number;
  /** How long a receiver may take to answer an attempt and still count as fast. */
  slowAfterMs?: number;
  idlePollMs?: number;
  mailTransport?: MailTransport | null;
  onError?: (error: unknown, what: string) => void;
}

const HOUSEKEEPING_MS = 1_000;
const DIGEST_CHECK_MS = 30_000;
const FAILING_POLL_MAX_MS = 5_000;

/**
 * The delivery worker and scheduler: claims due deliveries, sends them with bounded
 * concurrency, recovers claims of dead workers, sends queued e-mail and queues weekly digests.
 * Several may run on one database. `runOnce` is one full pass (tests, CLI); `start` loops.
 */
export class DeliveryWorker {
  readonly id = `wrk_${randomAlnum(12)}`;
  private readonly agent: Agent;
  private readonly recorder: AttemptRecorder;
  private readonly mail: MailTransport | null;
  private readonly inFlight = new Set<Promise<unknown>>();
  /**
   * Per webhook with attempts in flight (sent or being recorded): how many, when each of those
   * not yet answered began, and whether its receiver answered the last one fast.
   */
  private readonly webhooks = new Map<string, { inFlight: number; unanswered: number[]; fast: boolean }>();
  private readonly concurrency: number;
  private readonly perWebhook: number;
  private readonly perFastWebhook: number;
  private readonly slowAfterMs: number;
  private readonly idlePollMs: number;
  private readonly onError: (error: unknown, what: string) => void;
  private running = false;
  private loopDone: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private interruptSleep: (() => void) | null = null;
  private lastHousekeeping = 0;
  private lastDigestCheck = 0;
  private lastScheduledCheck = 0;
  private mailing: Promise<unknown> | null = null;

  constructor(
    private readonly ctx: ServiceCtx,
    options: WorkerOptions = {},
  ) {
    this.concurrency = options.concurrency ?? 64;
    this.perWebhook = options.perWebhook ?? 16;
    this.perFastWebhook =
      options.perFastWebhook ?? Math.max(this.perWebhook, this.concurrency - this.perWebhook);
    this.slowAfterMs = options.slowAfterMs ?? 1_000;
    this.idlePollMs = options.idlePollMs ?? 50;
    this.onError = options.onError ?? (() => undefined);
    this.recorder = new AttemptRecorder(ctx);
    this.agent = createDeliveryAgent(ctx.config.webhookAllowPrivateNetworks, ctx.config.webhookTimeoutMs);
    this.mail =
      options.mailTransport !== undefined
        ? options.mailTransport
        : ctx.config.smtpUrl
          ? createMailTransport(ctx.config.smtpUrl)
          : null;
  }

  /** One pass: digests, alerts and report e-mails due, dead claims, every due delivery (awaited), then e-mail. */
  async runOnce(): Promise<number> {
    await queueDueDigests({ ctx: this.ctx });
    await runScheduledChecks({ ctx: this.ctx });
    return this.deliverOnce();
  }

  /** One pass of deliveries and e-mail without the digest scheduler (`tally digests send`). */
  async deliverOnce(): Promise<number> {
    await this.recover();
    const started = await this.fill();
    await Promise.all(started);
    await this.sendMail();
    return started.length;
  }

  async recover(): Promise<void> {
    const expired = await findExpiredClaims({ ctx: this.ctx, limit: 100 });
    await recoverExpiredClaims(this.ctx, expired);
  }

  async sendMail(): Promise<number> {
    if (!this.mail) return 0;
    return sendDueEmails({ ctx: this.ctx, transport: this.mail });
  }

  /**
   * Claims as many due deliveries as there are free slots, within each webhook's share, and
   * starts sending them. A webhook with attempts in flight may have perFastWebhook of them while
   * its receiver answers fast (it answered the last attempt within slowAfterMs, and none it has
   * not answered yet has waited longer), else perWebhook; a webhook with none in flight starts
   * with perWebhook. Recording an outcome holds its slot but says nothing of the receiver.
   */
  private async fill(limit = this.concurrency - this.inFlight.size): Promise<Promise<unknown>[]> {
    const now = performance.now();
    const room = new Map<string, number>();
    for (const [id, w] of this.webhooks) {
      const fast = w.fast && w.unanswered.every((t) => now - t <= this.slowAfterMs);
      room.set(id, (fast ? this.perFastWebhook : this.perWebhook) - w.inFlight);
    }
    const claimed = await claimDueDeliveries({
      ctx: this.ctx,
      workerId: this.id,
      limit,
      leaseMs: this.ctx.config.webhookTimeoutMs + 60_000,
      room: { webhooks: room, otherwise: this.perWebhook },
    });
    return claimed.map((d) => this.track(d));
  }

  private track(delivery: ClaimedDelivery): Promise<unknown> {
    const startedAt = performance.now();
    const webhook = this.webhooks.get(delivery.webhookId) ?? { inFlight: 0, unanswered: [], fast: false };
    webhook.inFlight++;
    webhook.unanswered.push(startedAt);
    this.webhooks.set(delivery.webhookId, webhook);
    let answered = false;
    const answer = () => {
      if (answered) return;
      answered = true;
      webhook.unanswered.splice(webhook.unanswered.indexOf(startedAt), 1);
      webhook.fast = performance.now() - startedAt <= this.slowAfterMs;
    };
    const sending: Promise<unknown> = deliverMessage({
      ctx: this.ctx,
      agent: this.agent,
      delivery,
      record: (outcome) => {
        // The receiver has answered (or failed to): the rest is our own write.
        answer();
        // Outcomes that come together share a statement or a transaction (record.ts).
        return this.recorder.record(outcome);
      },
    })
      .catch((error: unknown) => this.onError(error, `delivery ${delivery.id}`))
      .finally(() => {
        this.inFlight.delete(sending);
        answer();
        webhook.inFlight--;
        if (webhook.inFlight === 0) this.webhooks.delete(delivery.webhookId);
        this.wakeUp?.();
      });
    this.inFlight.add(sending);
    return sending;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loopDone = this.loop();
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (this.running) {
      let claimed = 0;
      try {
        const now = this.ctx.clock.now().getTime();
        if (now - this.lastDigestCheck >= DIGEST_CHECK_MS) {
          this.lastDigestCheck = now;
          await queueDueDigests({ ctx: this.ctx });
        }
        if (now - this.lastScheduledCheck >= this.ctx.config.alertCheckSeconds * 1000) {
          this.lastScheduledCheck = now;
          // Alerts and report e-mails: a failure is reported and retried at the next check.
          await runScheduledChecks({ ctx: this.ctx }).catch((error: unknown) =>
            this.onError(error, 'alerts'),
          );
        }
        if (now - this.lastHousekeeping >= HOUSEKEEPING_MS) {
          this.lastHousekeeping = now;
          await this.recover();
          // E-mail runs beside deliveries: a hanging SMTP server must not hold them up.
          this.mailing ??= this.sendMail()
            .catch((error: unknown) => this.onError(error, 'e-mail'))
            .finally(() => (this.mailing = null));
        }
        if (this.inFlight.size < this.concurrency) {
          const limit = this.concurrency - this.inFlight.size;
          claimed = (await this.fill(limit)).length;
          // Fewer than it could: nothing more is due, or the rows it looked at were a full
          // webhook's. Claiming again at once would mostly scan the due rows for nothing (all of
          // a backlog, to skip a full webhook's), so the loop waits for a send to end or the
          // poll; another webhook's rows due behind a full one's wait that long too.
          if (claimed < limit) claimed = 0;
        }
        failures = 0;
      } catch (error) {
        this.onError(error, 'worker pass');
        failures++;
      }
      // Work found: look again at once. Otherwise wait for the poll interval or a free slot; while
      // passes fail (the database is away), wait longer each time, up to FAILING_POLL_MAX_MS, so
      // the loop survives the outage without flooding the log, and resumes when it ends.
      const wait =
        failures > 0 ? Math.min(this.idlePollMs * 2 ** failures, FAILING_POLL_MAX_MS) : this.idlePollMs;
      if ((claimed === 0 || failures > 0) && this.running) await this.sleep(wait);
    }
  }

  private sleep(ms: number): Promise<void> {
    // A finishing send frees a slot (or a webhook's share of them): look for work at once.
    const wakeable = this.inFlight.size > 0;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      this.wakeUp = wakeable ? wake : null;
      // stop() does not wait out a long pause (the back-off while the database is away).
      this.interruptSleep = wake;
    }).then(() => {
      this.wakeUp = null;
      this.interruptSleep = null;
    });
  }

  /** Stops claiming, lets attempts in flight finish and record, then closes connections. */
  async stop(): Promise<void> {
    this.running = false;
    this.interruptSleep?.();
    await this.loopDone;
    await Promise.all([...this.inFlight]);
    await this.mailing;
    await this.agent.close();
    this.mail?.close();
  }
}
