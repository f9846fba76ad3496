import { Batcher, type BatchOptions } from './batcher.js';
import { TallyError } from './errors.js';
import {
  newIdempotencyKey,
  send,
  type QueryValue,
  type RequestOptions,
  type TransportOptions,
} from './transport.js';
import type * as T from './types.js';

export interface TallyOptions {
  /** A `tally_live_…` key; an `ingest` key is enough for track, batch and task types. */
  apiKey: string;
  /** Where the service listens, e.g. `https://tally.example.com` (default http://127.0.0.1:8080). */
  baseUrl?: string;
  /** Per attempt (default 30000). */
  timeoutMs?: number;
  /** Retries after the first attempt on network errors, 5xx and 429 (default 3). */
  maxRetries?: number;
  /** First backoff delay (default 500 ms), doubled per retry with jitter; Retry-After wins. */
  retryBaseDelayMs?: number;
  retryMaxDelayMs?: number;
  /** Background batching of `enqueue` (see BatchOptions). */
  batch?: Partial<BatchOptions>;
  /** A fetch implementation (default the global one). */
  fetch?: typeof fetch;
  userAgent?: string;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface TrackOptions extends CallOptions {
  /** Sent as Idempotency-Key; one is generated per call when absent and reused on its retries. */
  idempotencyKey?: string;
}

function flattenMetadata<Q extends { metadata?: Record<string, string> }>(query: Q | undefined) {
  const { metadata, ...rest } = query ?? ({} as Q);
  const flat: Record<string, QueryValue> = { ...(rest as Record<string, QueryValue>) };
  for (const [key, value] of Object.entries(metadata ?? {})) flat[`metadata.${key}`] = value;
  return flat;
}

const seg = (value: string) => encodeURIComponent(value);

/**
 * The Tally API. Every method sends one logical request: reads, tracking (with its idempotency
 * key) and other idempotent writes are retried on network errors, 5xx and 429; writes the
 * service cannot deduplicate (creating a webhook or task type, a test ping) only on 429.
 */
export class Tally {
  private readonly transport: TransportOptions;
  private batcher: Batcher | null = null;
  private readonly batchOptions: Partial<BatchOptions>;

  constructor(options: TallyOptions) {
    if (!options.apiKey) throw new TypeError('Tally: apiKey is required');
    this.transport = {
      apiKey: options.apiKey,
      baseUrl: options.baseUrl ?? 'http://127.0.0.1:8080',
      timeoutMs: options.timeoutMs ?? 30_000,
      retry: {
        maxRetries: options.maxRetries ?? 3,
        baseDelayMs: options.retryBaseDelayMs ?? 500,
        maxDelayMs: options.retryMaxDelayMs ?? 20_000,
      },
      fetch: options.fetch ?? ((...args) => globalThis.fetch(...args)),
      userAgent: options.userAgent,
    };
    this.batchOptions = options.batch ?? {};
  }

  /** Sends one request and parses its JSON answer. */
  async request<R>(options: RequestOptions): Promise<R> {
    const response = await send(this.transport, options);
    if (response.status === 204) return undefined as R;
    return (await response.json()) as R;
  }

  private get<R>(path: string, query?: Record<string, QueryValue>, call?: CallOptions) {
    return this.request<R>({ method: 'GET', path, query, retry: 'all', signal: call?.signal });
  }

  private async *pages<Item>(
    fetchPage: (cursor: string | undefined) => Promise<{ data: Item[]; next_cursor: string | null }>,
  ): AsyncGenerator<Item> {
    let cursor: string | undefined;
    do {
      const page = await fetchPage(cursor);
      yield* page.data;
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
  }

  // Tracking

  /** Records one finished task. A retried call carries the same key, so it never counts twice. */
  track(event: T.TrackRequest, options: TrackOptions = {}): Promise<T.Event> {
    return this.request<T.Event>({
      method: 'POST',
      path: '/v1/track',
      body: event,
      headers: { 'idempotency-key': options.idempotencyKey ?? newIdempotencyKey() },
      retry: 'all',
      signal: options.signal,
    });
  }

  /** Records up to 500 events; each gets an idempotency key unless it has one. Answers 207 per event. */
  trackBatch(events: T.TrackBatchItem[], options: CallOptions = {}): Promise<T.TrackBatchResponse> {
    const keyed = events.map((event) => ({
      ...event,
      idempotency_key: event.idempotency_key ?? newIdempotencyKey(),
    }));
    return this.request<T.TrackBatchResponse>({
      method: 'POST',
      path: '/v1/track/batch',
      body: { events: keyed },
      retry: 'all',
      signal: options.signal,
    });
  }

  readonly events = {
    list: (query: T.ListEventsQuery = {}, call?: CallOptions) =>
      this.get<T.EventList>('/v1/events', query, call),
    /** Every event matching `query`, newest first, fetching pages as it goes. */
    iterate: (query: T.ListEventsQuery = {}) =>
      this.pages((cursor) => this.events.list({ ...query, cursor })),
    get: (eventId: string, call?: CallOptions) => this.get<T.Event>(`/v1/events/${seg(eventId)}`, {}, call),
    /** The event's original figures, every adjustment in commit order, and its current figures. */
    adjustments: (eventId: string, call?: CallOptions) =>
      this.get<T.EventAdjustments>(`/v1/events/${seg(eventId)}/adjustments`, {}, call),
    /** Every review of the event, oldest first; the last is in force. */
    reviews: (eventId: string, call?: CallOptions) =>
      this.get<T.EventReviews>(`/v1/events/${seg(eventId)}/reviews`, {}, call),
  };

  /**
   * Records a person's review of an event: its figures become the measured ones (docs/figures.md).
   * A retried call carries the same key, so it records one review.
   */
  review(eventId: string, review: T.ReviewRequest, options: TrackOptions = {}): Promise<T.ReviewResult> {
    return this.request<T.ReviewResult>({
      method: 'POST',
      path: `/v1/events/${seg(eventId)}/review`,
      body: review,
      headers: { 'idempotency-key': options.idempotencyKey ?? newIdempotencyKey() },
      retry: 'all',
      signal: options.signal,
    });
  }

  // Background batching

  /**
   * Buffers an event for `/v1/track/batch`, sent by size or interval. Throws a TallyError
   * `buffer_full` when the buffer holds `maxBufferSize` events (nothing is dropped silently).
   */
  enqueue(event: T.TrackBatchItem): void {
    this.batcher ??= new Batcher(this, this.batchOptions);
    this.batcher.enqueue(event);
  }

  /** Sends everything buffered; resolves when the buffer is empty. */
  async flush(): Promise<void> {
    await this.batcher?.flush();
  }

  /** Flushes and stops the batching timer; `enqueue` throws `client_closed` afterwards. */
  async shutdown(): Promise<void> {
    this.batcher ??= new Batcher(this, this.batchOptions);
    await this.batcher.shutdown();
  }

  // Reports

  readonly reports = {
    timeSaved: (query: T.ReportQuery = {}, call?: CallOptions) =>
      this.get<T.Report>('/v1/reports/time-saved', flattenMetadata(query), call),
    costSaved: (query: T.ReportQuery = {}, call?: CallOptions) =>
      this.get<T.Report>('/v1/reports/cost-saved', flattenMetadata(query), call),
    leaderboard: (query: T.LeaderboardQuery = {}, call?: CallOptions) =>
      this.get<T.Leaderboard>('/v1/reports/leaderboard', flattenMetadata(query), call),
    /** A report as CSV text (`time-saved`, `cost-saved` or `leaderboard`). */
    csv: async (
      report: 'time-saved' | 'cost-saved' | 'leaderboard',
      query: T.ReportQuery | T.LeaderboardQuery = {},
      call?: CallOptions,
    ) => {
      const response = await send(this.transport, {
        method: 'GET',
        path: `/v1/reports/${report}`,
        query: { ...flattenMetadata(query), format: 'csv' },
        headers: { accept: 'text/csv' },
        retry: 'all',
        signal: call?.signal,
      });
      return response.text();
    },
    /** The streamed CSV export: a ReadableStream of UTF-8 bytes (pipe it to a file or a response). */
    export: async (query: T.ExportQuery = {}, call?: CallOptions): Promise<ReadableStream<Uint8Array>> => {
      const response = await send(this.transport, {
        method: 'GET',
        path: '/v1/reports/export',
        query: flattenMetadata(query),
        headers: { accept: 'text/csv' },
        retry: 'all',
        signal: call?.signal,
      });
      if (!response.body)
        throw new TallyError({ code: 'invalid_response', message: 'The export has no body' });
      return response.body;
    },
    usage: (call?: CallOptions) => this.get<T.Usage>('/v1/reports/usage', {}, call),
    /** This month projected to its end, with a band, the method and the figures it rests on. */
    forecast: (query: T.ForecastQuery = {}, call?: CallOptions) =>
      this.get<T.Forecast>('/v1/reports/forecast', flattenMetadata(query), call),
    /** ROI net of fixed costs, cumulative net saved by month, the payback month, FTE freed. */
    payback: (query: T.PaybackQuery = {}, call?: CallOptions) =>
      this.get<T.Payback>('/v1/reports/payback', query, call),
  };

  /** This month's events against the plan (same as `reports.usage()`). */
  usage(call?: CallOptions): Promise<T.Usage> {
    return this.reports.usage(call);
  }

  // Task types

  readonly taskTypes = {
    list: (query: T.ListTaskTypesQuery = {}, call?: CallOptions) =>
      this.get<T.TaskTypeList>('/v1/task-types', query, call),
    create: (body: T.CreateTaskTypeRequest, call?: CallOptions) =>
      this.request<T.TaskType>({
        method: 'POST',
        path: '/v1/task-types',
        body,
        retry: 'rate_limited',
        signal: call?.signal,
      }),
    setOverride: (key: string, body: T.OverrideRequest, call?: CallOptions) =>
      this.request<T.TaskType>({
        method: 'POST',
        path: `/v1/task-types/${seg(key)}/override`,
        body,
        retry: 'all',
        signal: call?.signal,
      }),
    removeOverride: (key: string, call?: CallOptions) =>
      this.request<T.TaskType>({
        method: 'DELETE',
        path: `/v1/task-types/${seg(key)}/override`,
        retry: 'rate_limited',
        signal: call?.signal,
      }),
    archive: (key: string, call?: CallOptions) =>
      this.request<T.TaskType>({
        method: 'DELETE',
        path: `/v1/task-types/${seg(key)}`,
        retry: 'rate_limited',
        signal: call?.signal,
      }),
  };

  // Webhooks

  readonly webhooks = {
    create: (body: T.CreateWebhookRequest, call?: CallOptions) =>
      this.request<T.WebhookWithSecret>({
        method: 'POST',
        path: '/v1/webhooks',
        body,
        retry: 'rate_limited',
        signal: call?.signal,
      }),
    list: (query: T.PageQuery = {}, call?: CallOptions) =>
      this.get<T.WebhookList>('/v1/webhooks', query, call),
    iterate: (query: T.PageQuery = {}) => this.pages((cursor) => this.webhooks.list({ ...query, cursor })),
    get: (id: string, call?: CallOptions) => this.get<T.Webhook>(`/v1/webhooks/${seg(id)}`, {}, call),
    update: (id: string, body: T.UpdateWebhookRequest, call?: CallOptions) =>
      this.request<T.Webhook>({
        method: 'PATCH',
        path: `/v1/webhooks/${seg(id)}`,
        body,
        retry: 'all',
        signal: call?.signal,
      }),
    delete: async (id: string, call?: CallOptions): Promise<void> => {
      await this.request<void>({
        method: 'DELETE',
        path: `/v1/webhooks/${seg(id)}`,
        retry: 'rate_limited',
        signal: call?.signal,
      });
    },
    /** Queues a `test.ping` to the webhook; resolves with its message id. */
    test: (id: string, call?: CallOptions) =>
      this.request<{ message_id: string }>({
        method: 'POST',
        path: `/v1/webhooks/${seg(id)}/test`,
        retry: 'rate_limited',
        signal: call?.signal,
      }),
    deliveries: (id: string, query: T.PageQuery = {}, call?: CallOptions) =>
      this.get<T.DeliveryList>(`/v1/webhooks/${seg(id)}/deliveries`, query, call),
    iterateDeliveries: (id: string, query: T.PageQuery = {}) =>
      this.pages((cursor) => this.webhooks.deliveries(id, { ...query, cursor })),
  };

  // Budgets, fixed costs and report e-mails

  readonly budgets = {
    create: (body: T.CreateBudgetRequest, call?: CallOptions) =>
      this.request<T.Budget>({
        method: 'POST',
        path: '/v1/budgets',
        body,
        retry: 'rate_limited',
        signal: call?.signal,
      }),
    list: (query: T.PageQuery = {}, call?: CallOptions) => this.get<T.BudgetList>('/v1/budgets', query, call),
    iterate: (query: T.PageQuery = {}) => this.pages((cursor) => this.budgets.list({ ...query, cursor })),
    get: (id: string, call?: CallOptions) => this.get<T.Budget>(`/v1/budgets/${seg(id)}`, {}, call),
    update: (id: string, body: T.UpdateBudgetRequest, call?: CallOptions) =>
      this.request<T.Budget>({
        method: 'PATCH',
        path: `/v1/budgets/${seg(id)}`,
        body,
        retry: 'all',
        signal: call?.signal,
      }),
    delete: async (id: string, call?: CallOptions): Promise<void> => {
      await this.request<void>({
        method: 'DELETE',
        path: `/v1/budgets/${seg(id)}`,
        retry: 'rate_limited',
        signal: call?.signal,
      });
    },
  };

  readonly fixedCosts = {
    create: (body: T.CreateFixedCostRequest, call?: CallOptions) =>
      this.request<T.FixedCost>({
        method: 'POST',
        path: '/v1/fixed-costs',
        body,
        retry: 'rate_limited',
        signal: call?.signal,
      }),
    list: (query: T.PageQuery = {}, call?: CallOptions) =>
      this.get<T.FixedCostList>('/v1/fixed-costs', query, call),
    iterate: (query: T.PageQuery = {}) => this.pages((cursor) => this.fixedCosts.list({ ...query, cursor })),
    get: (id: string, call?: CallOptions) => this.get<T.FixedCost>(`/v1/fixed-costs/${seg(id)}`, {}, call),
    update: (id: string, body: T.UpdateFixedCostRequest, call?: CallOptions) =>
      this.request<T.FixedCost>({
        method: 'PATCH',
        path: `/v1/fixed-costs/${seg(id)}`,
        body,
        retry: 'all',
        signal: call?.signal,
      }),
    delete: async (id: string, call?: CallOptions): Promise<void> => {
      await this.request<void>({
        method: 'DELETE',
        path: `/v1/fixed-costs/${seg(id)}`,
        retry: 'rate_limited',
        signal: call?.signal,
      });
    },
  };

  readonly reportSchedules = {
    create: (body: T.CreateReportScheduleRequest, call?: CallOptions) =>
      this.request<T.ReportSchedule>({
        method: 'POST',
        path: '/v1/report-schedules',
        body,
        retry: 'rate_limited',
        signal: call?.signal,
      }),
    list: (query: T.PageQuery = {}, call?: CallOptions) =>
      this.get<T.ReportScheduleList>('/v1/report-schedules', query, call),
    get: (id: string, call?: CallOptions) =>
      this.get<T.ReportSchedule>(`/v1/report-schedules/${seg(id)}`, {}, call),
    update: (id: string, body: T.UpdateReportScheduleRequest, call?: CallOptions) =>
      this.request<T.ReportSchedule>({
        method: 'PATCH',
        path: `/v1/report-schedules/${seg(id)}`,
        body,
        retry: 'all',
        signal: call?.signal,
      }),
    delete: async (id: string, call?: CallOptions): Promise<void> => {
      await this.request<void>({
        method: 'DELETE',
        path: `/v1/report-schedules/${seg(id)}`,
        retry: 'rate_limited',
        signal: call?.signal,
      });
    },
    /** Sends the latest due period now to the recipients who have not had it (each gets it once). */
    send: (id: string, call?: CallOptions) =>
      this.request<T.ReportSendResult>({
        method: 'POST',
        path: `/v1/report-schedules/${seg(id)}/send`,
        retry: 'all',
        signal: call?.signal,
      }),
  };

  // Closed months (docs/periods.md)

  readonly periods = {
    list: (call?: CallOptions) => this.get<T.PeriodList>('/v1/periods', {}, call),
    /** The month's status and its statement in force (or the last one, once reopened). */
    get: (month: string, call?: CallOptions) => this.get<T.Period>(`/v1/periods/${seg(month)}`, {}, call),
    /** Every statement of the month, newest first. */
    statements: (month: string, call?: CallOptions) =>
      this.get<T.PeriodStatementList>(`/v1/periods/${seg(month)}/statements`, {}, call),
    /** The live figures, their difference from the statement and the entries that make it up. */
    changes: (month: string, call?: CallOptions) =>
      this.get<T.PeriodChanges>(`/v1/periods/${seg(month)}/changes`, {}, call),
    /** The statement as CSV text. */
    csv: async (month: string, call?: CallOptions) => {
      const response = await send(this.transport, {
        method: 'GET',
        path: `/v1/periods/${seg(month)}/statement.csv`,
        headers: { accept: 'text/csv' },
        retry: 'all',
        signal: call?.signal,
      });
      return response.text();
    },
    /** Closes a month that has ended (UTC) and freezes its statement. */
    close: (month: string, reason: string, call?: CallOptions) =>
      this.request<T.PeriodStatement>({
        method: 'POST',
        path: `/v1/periods/${seg(month)}/close`,
        body: { reason },
        retry: 'rate_limited',
        signal: call?.signal,
      }),
    /** Reopens a closed month; needs the owner role, so an admin key gets 403 insufficient_role. */
    reopen: (month: string, reason: string, call?: CallOptions) =>
      this.request<T.PeriodStatement>({
        method: 'POST',
        path: `/v1/periods/${seg(month)}/reopen`,
        body: { reason },
        retry: 'rate_limited',
        signal: call?.signal,
      }),
  };

  // Members and invitations (admin keys)

  readonly invitations = {
    /** Invites an e-mail with a role; a pending invitation of the same e-mail is sent again instead. */
    create: (body: T.CreateInvitationRequest, call?: CallOptions) =>
      this.request<T.Invitation>({
        method: 'POST',
        path: '/v1/invitations',
        body,
        retry: 'rate_limited',
        signal: call?.signal,
      }),
    list: (query: T.ListInvitationsQuery = {}, call?: CallOptions) =>
      this.get<T.InvitationList>('/v1/invitations', query, call),
    iterate: (query: T.ListInvitationsQuery = {}) =>
      this.pages((cursor) => this.invitations.list({ ...query, cursor })),
    get: (id: string, call?: CallOptions) => this.get<T.Invitation>(`/v1/invitations/${seg(id)}`, {}, call),
    /** Sends it again with a new link valid 7 days; the previous link stops working. */
    resend: (id: string, call?: CallOptions) =>
      this.request<T.Invitation>({
        method: 'POST',
        path: `/v1/invitations/${seg(id)}/resend`,
        retry: 'rate_limited',
        signal: call?.signal,
      }),
    /** Revokes it (again is a no-op). */
    revoke: (id: string, call?: CallOptions) =>
      this.request<T.Invitation>({
        method: 'DELETE',
        path: `/v1/invitations/${seg(id)}`,
        retry: 'all',
        signal: call?.signal,
      }),
  };

  readonly members = {
    list: (query: T.PageQuery = {}, call?: CallOptions) => this.get<T.MemberList>('/v1/members', query, call),
    iterate: (query: T.PageQuery = {}) => this.pages((cursor) => this.members.list({ ...query, cursor })),
    get: (accountId: string, call?: CallOptions) =>
      this.get<T.Member>(`/v1/members/${seg(accountId)}`, {}, call),
    /** Changes a member's role; demoting the last owner is refused (409 last_owner). */
    setRole: (accountId: string, role: T.Role, call?: CallOptions) =>
      this.request<T.Member>({
        method: 'PATCH',
        path: `/v1/members/${seg(accountId)}`,
        body: { role },
        retry: 'all',
        signal: call?.signal,
      }),
    /** Removes a member; their sessions in the organisation end at their next request. */
    remove: async (accountId: string, call?: CallOptions): Promise<void> => {
      await this.request<void>({
        method: 'DELETE',
        path: `/v1/members/${seg(accountId)}`,
        retry: 'rate_limited',
        signal: call?.signal,
      });
    },
  };

  // Settings and the audit log

  readonly settings = {
    get: (call?: CallOptions) => this.get<T.Settings>('/v1/settings', {}, call),
    update: (patch: T.SettingsPatch, call?: CallOptions) =>
      this.request<T.Settings>({
        method: 'PATCH',
        path: '/v1/settings',
        body: patch,
        retry: 'all',
        signal: call?.signal,
      }),
  };

  // OpenTelemetry ingest. Exports themselves (POST /v1/traces) come from an OpenTelemetry
  // exporter pointed at Tally, not from this client (docs/opentelemetry.md).

  readonly otlp = {
    mappings: {
      list: (call?: CallOptions) => this.get<T.OtlpMappingRuleList>('/v1/otlp/mappings', {}, call),
      /** Adds a rule; `resolved_runs` counts the unresolved runs it tracked at once. */
      create: (body: T.OtlpMappingRuleRequest, call?: CallOptions) =>
        this.request<T.OtlpMappingRuleCreated>({
          method: 'POST',
          path: '/v1/otlp/mappings',
          body,
          retry: 'rate_limited',
          signal: call?.signal,
        }),
      delete: async (id: string, call?: CallOptions): Promise<void> => {
        await this.request<void>({
          method: 'DELETE',
          path: `/v1/otlp/mappings/${seg(id)}`,
          retry: 'rate_limited',
          signal: call?.signal,
        });
      },
    },
    unresolvedRuns: {
      list: (query: T.PageQuery = {}, call?: CallOptions) =>
        this.get<T.OtlpUnresolvedRunList>('/v1/otlp/unresolved-runs', query, call),
      iterate: (query: T.PageQuery = {}) =>
        this.pages((cursor) => this.otlp.unresolvedRuns.list({ ...query, cursor })),
      /** Tracks the unresolved runs the rules and task types resolve now; resolves with how many. */
      retry: (call?: CallOptions) =>
        this.request<{ resolved_runs: number }>({
          method: 'POST',
          path: '/v1/otlp/unresolved-runs/retry',
          retry: 'all',
          signal: call?.signal,
        }),
      dismiss: async (id: string, call?: CallOptions): Promise<void> => {
        await this.request<void>({
          method: 'DELETE',
          path: `/v1/otlp/unresolved-runs/${seg(id)}`,
          retry: 'rate_limited',
          signal: call?.signal,
        });
      },
    },
  };

  readonly auditLog = {
    list: (query: T.PageQuery = {}, call?: CallOptions) =>
      this.get<T.AuditLogPage>('/v1/audit-log', query, call),
    iterate: (query: T.PageQuery = {}) => this.pages((cursor) => this.auditLog.list({ ...query, cursor })),
  };

  // Single sign-on (Enterprise): the client secret is write-only, never returned.

  readonly sso = {
    get: (call?: CallOptions) => this.get<T.SsoConnection>('/v1/sso', {}, call),
    /** Creates or replaces the configuration; omit `client_secret` to keep the stored one. */
    put: (body: T.SsoConnectionInput, call?: CallOptions) =>
      this.request<T.SsoConnection>({
        method: 'PUT',
        path: '/v1/sso',
        body,
        retry: 'all',
        signal: call?.signal,
      }),
    delete: async (call?: CallOptions): Promise<void> => {
      await this.request<void>({
        method: 'DELETE',
        path: '/v1/sso',
        retry: 'rate_limited',
        signal: call?.signal,
      });
    },
  };

  // Assumptions with effective dates, and restatements of past figures

  readonly assumptions = {
    /** Every version of the baselines, rates and credits, newest recorded first. */
    history: (query: T.AssumptionHistoryQuery = {}, call?: CallOptions) =>
      this.get<T.AssumptionHistory>('/v1/assumptions/history', query, call),
    iterateHistory: (query: T.AssumptionHistoryQuery = {}) =>
      this.pages((cursor) => this.assumptions.history({ ...query, cursor })),
    /** Dry run of a change: the events it moves and each month before and after. Writes nothing. */
    previewRestatement: (body: T.AssumptionChange, call?: CallOptions) =>
      this.request<T.RestatementPreview>({
        method: 'POST',
        path: '/v1/restatements/preview',
        body,
        retry: 'all',
        signal: call?.signal,
      }),
    /**
     * Applies a change from a past date, with a reason. `status` is `applied`, or `staging` while
     * a large organisation's figures are applied in the background (poll `getRestatement`).
     */
    restate: (body: T.RestatementRequest, call?: CallOptions) =>
      this.request<T.Restatement>({
        method: 'POST',
        path: '/v1/restatements',
        body,
        retry: 'rate_limited',
        signal: call?.signal,
      }),
    /** A restatement: its status while applied, and the version it recorded. */
    getRestatement: (id: string, call?: CallOptions) =>
      this.get<T.Restatement>(`/v1/restatements/${seg(id)}`, {}, call),
  };
}
