/**
 * The one list of error codes and their HTTP statuses (DESIGN §2). Domain code throws
 * `AppError`; only the HTTP edge turns it into a response.
 */
export const ERROR_STATUS = {
  missing_authorization: 401,
  invalid_api_key: 401,
  key_revoked: 401,
  validation_error: 422,
  unknown_task_type: 422,
  occurred_at_out_of_range: 422,
  rate_limited: 429,
  quota_exceeded: 429,
  invalid_json: 400,
  invalid_otlp: 400,
  unsupported_media_type: 415,
  payload_too_large: 413,
  not_found: 404,
  plan_upgrade_required: 403,
  insufficient_scope: 403,
  insufficient_role: 403,
  cannot_archive_builtin: 409,
  last_owner: 409,
  bad_request: 400,
  request_timeout: 408,
  headers_too_large: 431,
  service_unavailable: 503,
  internal_error: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorDetail {
  path: string;
  message: string;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetail[] | undefined;

  constructor(code: ErrorCode, message: string, details?: ErrorDetail[]) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = details;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export function validationError(path: string, message: string): AppError {
  return new AppError('validation_error', message, [{ path, message }]);
}

export function notFound(what: string): AppError {
  return new AppError('not_found', `${what} was not found.`);
}
