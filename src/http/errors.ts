import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERROR_STATUS, type ErrorCode, type ErrorDetail } from '../errors.js';
import { isUnavailableError } from '../storage/db.js';

interface AjvIssue {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

export function errorBody(code: ErrorCode, message: string, requestId: string, details?: ErrorDetail[]) {
  return { error: { code, message, ...(details ? { details } : {}), request_id: requestId } };
}

export function sendError(reply: FastifyReply, error: AppError) {
  return reply
    .code(ERROR_STATUS[error.code])
    .send(errorBody(error.code, error.message, reply.request.id, error.details));
}

/** Turns one ajv issue into `{path, message}` with the path of the offending field. */
function detailOf(part: string, issue: AjvIssue): ErrorDetail {
  const base = `/${part}${issue.instancePath}`;
  switch (issue.keyword) {
    case 'additionalProperties':
      return { path: `${base}/${String(issue.params.additionalProperty)}`, message: 'is not a known field' };
    case 'required':
      return { path: `${base}/${String(issue.params.missingProperty)}`, message: 'is required' };
    case 'enum':
      return {
        path: base,
        message: `must be one of ${(issue.params.allowedValues as unknown[]).map(String).join(', ')}`,
      };
    default:
      return { path: base, message: issue.message ?? 'is invalid' };
  }
}

export function validationDetails(part: string, issues: AjvIssue[]): ErrorDetail[] {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const issue of issues) {
    const detail = detailOf(part, issue);
    const id = `${detail.path} ${detail.message}`;
    if (!seen.has(id)) {
      seen.add(id);
      details.push(detail);
    }
  }
  return details;
}

export function toAppError(
  error: FastifyError & { validation?: AjvIssue[]; validationContext?: string },
): AppError {
  if (error instanceof AppError) return error;
  if (error.validation) {
    const details = validationDetails(error.validationContext ?? 'body', error.validation);
    const first = details[0];
    return new AppError(
      'validation_error',
      first ? `Invalid request: ${first.path} ${first.message}.` : 'Invalid request.',
      details,
    );
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'The request body is too large.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type', 'Send the body as Content-Type: application/json.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      // The body could not be read as sent; of the 400 codes, invalid_json is the one that fits.
      return new AppError('invalid_json', 'The body does not match its Content-Length.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('invalid_json', 'The body is empty; send a JSON object.');
  }
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return new AppError('invalid_json', 'The body is not valid JSON.');
  }
  if (isUnavailableError(error)) {
    return new AppError('service_unavailable', 'The database cannot be reached; try again shortly.');
  }
  return new AppError('internal_error', 'Something went wrong on our side.');
}

export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const appError = toAppError(error);
  if (appError.code === 'internal_error') request.log.error({ err: error }, 'unhandled error');
  else if (appError.code === 'service_unavailable') request.log.warn({ err: error }, 'database unavailable');
  if (appError.code === 'service_unavailable') reply.header('Retry-After', '5');
  if (appError.code === 'rate_limited') reply.header('Retry-After', '1');
  return sendError(reply, appError);
}
