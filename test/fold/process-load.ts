import { request } from 'undici';

const DAY_MS = 86_400_000;
const TASK_TYPES = ['support_ticket_reply', 'dev_bug_fix'] as const;
const OUTCOMES = ['success', 'failure', 'needs_review'] as const;

type TrackBody = Record<string, unknown>;

/** One request (or, for `keyed`, the same request to both processes at once). */
export type LoadJob =
  | { kind: 'single'; process: number; body: TrackBody }
  | { kind: 'batch'; process: number; events: TrackBody[] }
  | { kind: 'keyed'; key: string; body: TrackBody };

export interface LoadPlan {
  jobs: LoadJob[];
  /** The events the plan stores: one per single, one per batch item, one per keyed pair. */
  uniqueEvents: number;
}

function trackBody(rand: () => number, agent: number): TrackBody {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;
  return {
    agent_id: `agent-${agent}`,
    task_type: pick(TASK_TYPES),
    outcome: pick(OUTCOMES),
    ...(rand() < 0.5 ? { agent_cost: Math.round(rand() * 1e6) / 1e6 } : {}),
    ...(rand() < 0.7 ? { metadata: { client_id: `c${Math.floor(rand() * 4)}` } } : {}),
    // Back-dated events fold into their own (older) days.
    ...(rand() < 0.25
      ? { occurred_at: new Date(Date.now() - Math.floor(rand() * 20 * DAY_MS)).toISOString() }
      : {}),
  };
}

/**
 * First every agent's first event sent to both processes at once (so the two race to record it),
 * then single events, a few batches and keyed pairs, shuffled.
 */
export function loadPlan(
  rand: () => number,
  agents: number,
  sizes = { singles: 2_400, batches: 6, batchSize: 200, keyed: 100 },
): LoadPlan {
  const agent = () => Math.floor(rand() * agents);
  const firsts: LoadJob[] = Array.from({ length: agents }, (_, i) =>
    [0, 1].map((process): LoadJob => ({ kind: 'single', process, body: trackBody(rand, i) })),
  ).flat();
  const rest: LoadJob[] = [
    ...Array.from({ length: sizes.singles }, (_, i): LoadJob => ({
      kind: 'single',
      process: i % 2,
      body: trackBody(rand, agent()),
    })),
    ...Array.from({ length: sizes.batches }, (_, i): LoadJob => ({
      kind: 'batch',
      process: i % 2,
      events: Array.from({ length: sizes.batchSize }, () => trackBody(rand, agent())),
    })),
    ...Array.from({ length: sizes.keyed }, (_, i): LoadJob => ({
      kind: 'keyed',
      key: `procs-${i}`,
      body: trackBody(rand, agent()),
    })),
  ];
  for (let i = rest.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [rest[i], rest[j]] = [rest[j] as LoadJob, rest[i] as LoadJob];
  }
  return {
    jobs: [...firsts, ...rest],
    uniqueEvents: 2 * agents + sizes.singles + sizes.batches * sizes.batchSize + sizes.keyed,
  };
}

export interface KeyedAnswer {
  eventId: string | undefined;
  replayed: boolean;
}

/** A request answered otherwise than 201 (a batch: 207 with every item 201), or not at all. */
export interface LoadFailure {
  /** The process (index into `bases`) the request went to. */
  process: number;
  status: number | 'no response';
  what: string;
}

export interface Load {
  requests: number;
  /** Ids of the events acknowledged with 201 (a keyed pair's twice). */
  eventIds: string[];
  /** Both answers of each keyed pair answered 201 by both processes. */
  keyedPairs: Array<[KeyedAnswer, KeyedAnswer]>;
  failures: LoadFailure[];
}

async function post(url: string, apiKey: string, body: unknown, key?: string) {
  const res = await request(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${apiKey}`,
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    body: JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text };
}

/**
 * Runs the plan's jobs over `bases` (one URL per process, read at each request, so a test can
 * send a process's share elsewhere while it restarts), `concurrency` requests at a time.
 * `beforeJob` runs before the job of each index is sent.
 */
export async function runLoad(
  bases: readonly string[],
  apiKey: string,
  plan: LoadPlan,
  concurrency: number,
  beforeJob: (index: number) => void = () => undefined,
): Promise<Load> {
  const load: Load = { requests: 0, eventIds: [], keyedPairs: [], failures: [] };
  const base = (process: number) => bases[process % bases.length] ?? '';
  const fail = (process: number, status: LoadFailure['status'], what: string): undefined =>
    void load.failures.push({ process, status, what });
  const send = async (process: number, path: string, body: unknown, key?: string) => {
    load.requests += 1;
    try {
      return await post(`${base(process)}${path}`, apiKey, body, key);
    } catch (error) {
      return fail(process, 'no response', `${path}: ${(error as Error).message}`);
    }
  };
  const single = async (process: number, body: TrackBody, key?: string): Promise<KeyedAnswer | undefined> => {
    const res = await send(process, '/v1/track', body, key);
    if (res === undefined) return undefined;
    if (res.status !== 201) return fail(process, res.status, `track: ${res.text}`);
    const eventId = (JSON.parse(res.text) as { event_id: string }).event_id;
    load.eventIds.push(eventId);
    return { eventId, replayed: res.headers['idempotent-replayed'] === 'true' };
  };
  const run = async (job: LoadJob) => {
    if (job.kind === 'single') {
      await single(job.process, job.body);
    } else if (job.kind === 'keyed') {
      const [x, y] = await Promise.all([0, 1].map((process) => single(process, job.body, job.key)));
      if (x !== undefined && y !== undefined) load.keyedPairs.push([x, y]);
    } else {
      const res = await send(job.process, '/v1/track/batch', { events: job.events });
      if (res === undefined) return;
      if (res.status !== 207) return void fail(job.process, res.status, `batch: ${res.text}`);
      const { data } = JSON.parse(res.text) as {
        data: Array<{ status: number; event?: { event_id: string } }>;
      };
      for (const item of data) {
        if (item.status === 201 && item.event) load.eventIds.push(item.event.event_id);
        else fail(job.process, item.status, `batch item: ${JSON.stringify(item)}`);
      }
    }
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let index = next++; index < plan.jobs.length; index = next++) {
        beforeJob(index);
        await run(plan.jobs[index] as LoadJob);
      }
    }),
  );
  return load;
}
