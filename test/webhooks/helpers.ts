import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Harness } from '../support/harness.js';

export const ALLOW_PRIVATE = { TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };

/** Subscribes `url` and returns the webhook with its secret. */
export async function subscribe(
  h: Harness,
  url: string,
  eventTypes: string[] = ['event.created'],
  apiKey?: string,
): Promise<{ id: string; secret: string }> {
  const res = await h.request({
    method: 'POST',
    url: '/v1/webhooks',
    payload: { url, event_types: eventTypes },
    ...(apiKey ? { apiKey } : {}),
  });
  if (res.statusCode !== 201) throw new Error(`subscribe failed: ${res.body}`);
  return res.json();
}

export async function track(h: Harness, agentId = 'bot-1', apiKey?: string) {
  const res = await h.request({
    method: 'POST',
    url: '/v1/track',
    payload: { agent_id: agentId, task_type: 'support_ticket_reply', outcome: 'success' },
    ...(apiKey ? { apiKey } : {}),
  });
  if (res.statusCode !== 201) throw new Error(`track failed: ${res.body}`);
  return res.json() as { event_id: string; agent_id: string };
}

/** The spec §6.2 check, written independently of the service with node:crypto only. */
export function verifyTallySignature(
  header: string,
  body: string,
  secret: string,
): { ok: boolean; t: number } {
  const parts = Object.fromEntries(header.split(',').map((p) => p.split('=') as [string, string]));
  const t = Number(parts.t);
  const expected = createHmac('sha256', secret).update(`${parts.t}.${body}`).digest();
  const given = Buffer.from(parts.v1 ?? '', 'hex');
  return { ok: given.length === expected.length && timingSafeEqual(given, expected), t };
}

export async function deliveriesOf(h: Harness, webhookId: string) {
  const res = await h.request({ method: 'GET', url: `/v1/webhooks/${webhookId}/deliveries` });
  if (res.statusCode !== 200) throw new Error(`deliveries failed: ${res.body}`);
  return res.json().data as Array<{
    id: string;
    message_id: string;
    event_type: string;
    status: string;
    next_attempt_at: string | null;
    attempts: Array<{
      attempt: number;
      succeeded: boolean;
      status_code: number | null;
      response_body: string | null;
      error: string | null;
      signature: string | null;
      duration_ms: number;
      started_at: string;
      finished_at: string;
    }>;
  }>;
}
