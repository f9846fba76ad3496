export { Tally, type TallyOptions, type CallOptions, type TrackOptions } from './client.js';
export {
  TallyError,
  type TallyErrorCode,
  type ApiErrorCode,
  type ClientErrorCode,
  type ErrorDetail,
} from './errors.js';
export type { BatchOptions } from './batcher.js';
export { verifyWebhook, type VerifyOptions, type WebhookHeaders } from './webhooks.js';
export type * from './types.js';
export type { components, operations, paths } from './openapi.js';
