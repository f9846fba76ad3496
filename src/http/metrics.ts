import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** One registry per app, so several apps in one process (tests) do not collide. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'tally_' });
  const requests = new Counter({
    name: 'tally_http_requests_total',
    help: 'HTTP requests by method, route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'tally_http_request_duration_seconds',
    help: 'HTTP request duration by route.',
    labelNames: ['route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const eventsTracked = new Counter({
    name: 'tally_events_tracked_total',
    help: 'Events stored by POST /v1/track and /v1/track/batch.',
    registers: [registry],
  });
  return { registry, requests, duration, eventsTracked };
}

export type Metrics = ReturnType<typeof createMetrics>;
