/**
 * Event types a subscription may choose: every type of spec §6.1 (§2.4), then the budget and
 * usage alerts (src/alerts/), and restatements of past figures (src/assumptions/). `test.ping` is sent on request whatever a webhook subscribes to,
 * so choosing it changes nothing but is accepted.
 */
export const SUBSCRIBABLE_EVENT_TYPES = [
  'event.created',
  'agent.first_event',
  'weekly.digest',
  'test.ping',
  'budget.threshold_crossed',
  'budget.forecast_exceeded',
  'usage.threshold_crossed',
  'event.reviewed',
  'figures.restated',
] as const;
export type SubscribableEventType = (typeof SUBSCRIBABLE_EVENT_TYPES)[number];
export type MessageType = SubscribableEventType;

export type WebhookStatus = 'active' | 'failing' | 'deactivated';

/** DESIGN §8 thresholds, counted in failed deliveries (not attempts). */
export const FAILING_AFTER = 5;
export const DEACTIVATED_AFTER = 20;
