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

export interface Load {
  requests: number;
  /** Ids of the events acknowledged with 201 (a keyed pair's twice). */
  eventIds: string[];
  keyedPairs: Array<[KeyedAnswer, KeyedAnswer]>;
  /** Every answer other than a 201 (a 207 with an item other than 201 included). */
  failures: string[];
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

/** Runs the plan's jobs over `bases` (one URL per process), `concurrency` requests at a time. */
export async function runLoad(
  bases: readonly string[],
  apiKey: string,
  plan: LoadPlan,
  concurrency: number,
): Promise<Load> {
  const load: Load = { requests: 0, eventIds: [], keyedPairs: [], failures: [] };
  const base = (process: number) => bases[process % bases.length] ?? '';
  const single = async (url: string, body: TrackBody, key?: string): Promise<KeyedAnswer> => {
    load.requests += 1;
    const res = await post(`${url}/v1/track`, apiKey, body, key);
    if (res.status !== 201) {
      load.failures.push(`${url} track ${res.status} ${res.text}`);
      return { eventId: undefined, replayed: false };
    }
    const eventId = (JSON.parse(res.text) as { event_id: string }).event_id;
    load.eventIds.push(eventId);
    return { eventId, replayed: res.headers['idempotent-replayed'] === 'true' };
  };
  const run = async (job: LoadJob) => {
    if (job.kind === 'single') {
      await single(base(job.process), job.body);
    } else if (job.kind === 'keyed') {
      const pair = await Promise.all(bases.map((url) => single(url, job.body, job.key)));
      load.keyedPairs.push(pair as [KeyedAnswer, KeyedAnswer]);
    } else {
      load.requests += 1;
      const res = await post(`${base(job.process)}/v1/track/batch`, apiKey, { events: job.events });
      if (res.status !== 207) return void load.failures.push(`batch ${res.status} ${res.text}`);
      const { data } = JSON.parse(res.text) as {
        data: Array<{ status: number; event?: { event_id: string } }>;
      };
      for (const item of data) {
        if (item.status === 201 && item.event) load.eventIds.push(item.event.event_id);
        else load.failures.push(`batch item ${JSON.stringify(item)}`);
      }
    }
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let job = plan.jobs[next++]; job !== undefined; job = plan.jobs[next++]) {
        try {
          await run(job);
        } catch (error) {
          load.failures.push(`${job.kind}: ${(error as Error).message}`);
        }
      }
    }),
  );
  return load;
}
