import type { Tally } from './client.js';
import { TallyError } from './errors.js';
import { newIdempotencyKey, retryDelay } from './transport.js';
import type { TrackBatchItem } from './types.js';

export interface BatchOptions {
  /** Events per request (1–500, default 100). */
  maxBatchSize: number;
  /** Longest time an event waits in the buffer (default 1000 ms). */
  flushIntervalMs: number;
  /** Events the buffer holds at most (default 10000); `enqueue` throws `buffer_full` beyond. */
  maxBufferSize: number;
  /** Sends of one event after a retryable failure (429, 5xx, network) before giving up (default 5). */
  maxAttempts: number;
  /** Called once for every event the service rejected or that could not be sent. */
  onError: (event: TrackBatchItem, error: TallyError) => void;
}

interface Pending {
  event: TrackBatchItem & { idempotency_key: string };
  attempts: number;
}

const DEFAULTS: BatchOptions = {
  maxBatchSize: 100,
  flushIntervalMs: 1000,
  maxBufferSize: 10_000,
  maxAttempts: 5,
  onError: (event, error) =>
    console.error(`tally: event of ${event.agent_id} not tracked: ${error.code}`, error),
};

/** The buffer behind `Tally.enqueue`: one send at a time, in order, each event with its own key. */
export class Batcher {
  private readonly options: BatchOptions;
  private buffer: Pending[] = [];
  private sending: Promise<void> = Promise.resolve();
  private timer: ReturnType<typeof setInterval> | null = null;
  private closed = false;

  constructor(
    private readonly client: Tally,
    options: Partial<BatchOptions>,
  ) {
    this.options = { ...DEFAULTS, ...options };
    this.options.maxBatchSize = Math.min(500, Math.max(1, this.options.maxBatchSize));
  }

  enqueue(event: TrackBatchItem): void {
    if (this.closed) throw new TallyError({ code: 'client_closed', message: 'enqueue after shutdown()' });
    if (this.buffer.length >= this.options.maxBufferSize) {
      throw new TallyError({
        code: 'buffer_full',
        message: `The batch buffer holds ${this.options.maxBufferSize} events; flush() or slow down`,
      });
    }
    this.buffer.push({
      event: { ...event, idempotency_key: event.idempotency_key ?? newIdempotencyKey() },
      attempts: 0,
    });
    this.startTimer();
    if (this.buffer.length >= this.options.maxBatchSize) void this.sendNext().catch(() => undefined);
  }

  async flush(): Promise<void> {
    await this.sending;
    while (this.buffer.length > 0) await this.sendNext();
  }

  async shutdown(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  private startTimer(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => {
      if (this.buffer.length > 0) void this.sendNext().catch(() => undefined);
    }, this.options.flushIntervalMs);
    // In Node, a pending batch timer must not keep the process alive (shutdown() sends the rest).
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** Queues one send after the one in flight. */
  private sendNext(): Promise<void> {
    const next = this.sending.then(() => this.sendOnce());
    this.sending = next.catch(() => undefined);
    return next;
  }

  private async sendOnce(): Promise<void> {
    const batch = this.buffer.splice(0, this.options.maxBatchSize);
    if (batch.length === 0) return;
    let results: { status: number; error?: { code: string; message: string; request_id: string } }[];
    try {
      results = (await this.client.trackBatch(batch.map((p) => p.event))).data;
    } catch (error) {
      const failure =
        error instanceof TallyError
          ? error
          : new TallyError({ code: 'network_error', message: String(error), cause: error });
      if (this.splitInvalid(batch, failure)) return;
      await this.retryOrReport(batch, () => failure, failure.retryable);
      return;
    }
    const again: Pending[] = [];
    batch.forEach((pending, i) => {
      const result = results[i];
      if (result && result.status < 300) return;
      const error = new TallyError({
        code: (result?.error?.code ?? 'invalid_response') as TallyError['code'],
        message: result?.error?.message ?? 'No result for this event',
        status: result?.status ?? 0,
        requestId: result?.error?.request_id ?? null,
      });
      if (error.retryable && pending.attempts + 1 < this.options.maxAttempts) {
        pending.attempts++;
        again.push(pending);
      } else this.report(pending, error);
    });
    if (again.length > 0) {
      // Rate-limited items go back to the front, in order, after the window resets.
      this.buffer.unshift(...again);
      await new Promise((resolve) =>
        setTimeout(
          resolve,
          retryDelay(
            { maxRetries: 0, baseDelayMs: 500, maxDelayMs: 5000 },
            Math.max(...again.map((p) => p.attempts)) - 1,
            '1',
          ),
        ),
      );
    }
  }

  /**
   * A body the schema refuses fails the whole request (422 naming `/body/events/<i>/…`): the
   * events it names are rejected, the others go back to the front of the buffer.
   */
  private splitInvalid(batch: Pending[], failure: TallyError): boolean {
    if (failure.code !== 'validation_error') return false;
    const bad = new Map<number, TallyError['details']>();
    for (const detail of failure.details) {
      const index = /^\/body\/events\/(\d+)(?:\/|$)/.exec(detail.path)?.[1];
      if (index === undefined) return false;
      bad.set(Number(index), [...(bad.get(Number(index)) ?? []), detail]);
    }
    if (bad.size === 0) return false;
    const good: Pending[] = [];
    batch.forEach((pending, i) => {
      const details = bad.get(i);
      if (!details) return good.push(pending);
      this.report(
        pending,
        new TallyError({
          code: 'validation_error',
          message: `Invalid event: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`,
          status: failure.status,
          requestId: failure.requestId,
          details,
        }),
      );
    });
    this.buffer.unshift(...good);
    return true;
  }

  private async retryOrReport(batch: Pending[], error: () => TallyError, retryable: boolean): Promise<void> {
    const again = batch.filter((p) => retryable && p.attempts + 1 < this.options.maxAttempts);
    for (const pending of batch) if (!again.includes(pending)) this.report(pending, error());
    for (const pending of again) pending.attempts++;
    this.buffer.unshift(...again);
    if (again.length > 0) await new Promise((resolve) => setTimeout(resolve, 1000));
  }

  private report(pending: Pending, error: TallyError): void {
    try {
      this.options.onError(pending.event, error);
    } catch {
      // a throwing callback must not stop the batches behind it
    }
  }
}
