import type { Harness, TestOrg } from '../support/harness.js';

/** A valid custom task type body; tests override what they are about. */
export function customBody(overrides: Record<string, unknown> = {}) {
  return {
    key: 'invoice_matching',
    display_name: 'Match invoices to purchase orders',
    category: 'ops',
    default_baseline_minutes: 18,
    ...overrides,
  };
}

export function createCustom(h: Harness, overrides: Record<string, unknown> = {}, org?: TestOrg) {
  return h.request({
    method: 'POST',
    url: '/v1/task-types',
    payload: customBody(overrides),
    ...(org ? { apiKey: org.apiKey } : {}),
  });
}

export function setOverride(h: Harness, key: string, payload: Record<string, unknown>, org?: TestOrg) {
  return h.request({
    method: 'POST',
    url: `/v1/task-types/${key}/override`,
    payload,
    ...(org ? { apiKey: org.apiKey } : {}),
  });
}

export function track(h: Harness, payload: Record<string, unknown>) {
  return h.request({
    method: 'POST',
    url: '/v1/track',
    payload: { agent_id: 'bot-1', outcome: 'success', ...payload },
  });
}
