import type { components } from './openapi.js';

/** The service's closed list of error codes (DESIGN §2). */
export type ApiErrorCode = components['schemas']['ErrorCode'];

/** Codes the client itself raises, beside the service's own. */
export type ClientErrorCode =
  | 'network_error'
  | 'timeout'
  | 'buffer_full'
  | 'client_closed'
  | 'invalid_signature'
  | 'stale_signature'
  | 'invalid_response';

export type TallyErrorCode = ApiErrorCode | ClientErrorCode;

export type ErrorDetail = components['schemas']['ErrorDetail'];

/** Every failure of the client: an error answer of the service, or one the client raises itself. */
export class TallyError extends Error {
  readonly code: TallyErrorCode;
  /** HTTP status of the answer; 0 when there was none (network, verification, buffer). */
  readonly status: number;
  readonly requestId: string | null;
  readonly details: ErrorDetail[];

  constructor(input: {
    code: TallyErrorCode;
    message: string;
    status?: number;
    requestId?: string | null;
    details?: ErrorDetail[];
    cause?: unknown;
  }) {
    super(input.message, input.cause === undefined ? undefined : { cause: input.cause });
    this.name = 'TallyError';
    this.code = input.code;
    this.status = input.status ?? 0;
    this.requestId = input.requestId ?? null;
    this.details = input.details ?? [];
  }

  /** Network errors, 5xx and 429 may succeed when sent again. */
  get retryable(): boolean {
    return (
      this.code === 'network_error' || this.code === 'timeout' || this.status === 429 || this.status >= 500
    );
  }
}
