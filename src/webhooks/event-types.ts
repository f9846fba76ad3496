/** Event types a subscription may choose (spec §6.1); `test.ping` is sent on request only. */
export const SUBSCRIBABLE_EVENT_TYPES = ['event.created', 'agent.first_event', 'weekly.digest'] as const;
export type SubscribableEventType = (typeof SUBSCRIBABLE_EVENT_TYPES)[number];
export type MessageType = SubscribableEventType | 'test.ping';

export type WebhookStatus = 'active' | 'failing' | 'deactivated';

/** DESIGN §8 thresholds, counted in failed deliveries (not attempts). */
export const FAILING_AFTER = 5;
export const DEACTIVATED_AFTER = 20;
