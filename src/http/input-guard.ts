import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERROR_STATUS, type ErrorCode, type ErrorDetail } from '../errors.js';
import { newId } from '../ids.js';
import { registerBodyDecoding } from './content-encoding.js';
import { errorBody, sendError } from './errors.js';
import { parseJsonBody } from './json-body.js';
import { unstorableIssues } from './storable.js';

/** Query parameters a request may carry, repeated ones counted each time (README "Limits"). */
export const MAX_QUERY_PARAMETERS = 50;

function queryCount(query: unknown): number {
  if (typeof query !== 'object' || query === null) return 0;
  return Object.values(query).reduce<number>((n, v) => n + (Array.isArray(v) ? v.length : 1), 0);
}

/** The body without the items a route checks one by one (`itemsAt`, the batch's events). */
function bodyOutsideItems(request: FastifyRequest): unknown {
  const { body } = request;
  const field = request.routeOptions.config.itemsAt;
  if (field === undefined || typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  if (!Array.isArray((body as Record<string, unknown>)[field])) return body;
  return Object.fromEntries(Object.entries(body).filter(([key]) => key !== field));
}

/**
 * Classes of input every route refuses at the edge, before its own validation, the same way on
 * both engines: JSON bodies too deep, with a key twice or a prototype key (json-body.ts); strings
 * neither engine stores as sent and numbers that are not finite, in the path, query string,
 * headers and body (storable.ts); too many query parameters. Compressed bodies are decoded first,
 * within the route's body limit (content-encoding.ts).
 */
export function registerInputGuard(app: FastifyInstance): void {
  registerBodyDecoding(app);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });

  app.addHook('preValidation', async (request) => {
    if (queryCount(request.query) > MAX_QUERY_PARAMETERS) {
      const message = `must have at most ${MAX_QUERY_PARAMETERS} parameters`;
      throw new AppError('validation_error', `Invalid request: /querystring ${message}.`, [
        { path: '/querystring', message },
      ]);
    }
    const issues: ErrorDetail[] = [
      ...unstorableIssues(request.params, '/params'),
      ...unstorableIssues(request.query, '/querystring'),
      ...unstorableIssues(request.headers, '/headers'),
      ...unstorableIssues(bodyOutsideItems(request), '/body'),
    ];
    const first = issues[0];
    if (first) {
      throw new AppError('validation_error', `Invalid request: ${first.path} ${first.message}.`, issues);
    }
  });
}

const CLIENT_ERRORS: Record<string, [ErrorCode, string]> = {
  HPE_HEADER_OVERFLOW: ['headers_too_large', 'The request headers are too large.'],
  ERR_HTTP_REQUEST_TIMEOUT: ['request_timeout', 'The request took too long to arrive.'],
  ERR_HTTP_REQUEST_HEADERS_TIMEOUT: ['request_timeout', 'The request headers took too long to arrive.'],
};

const REASONS: Partial<Record<number, string>> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};

/**
 * Requests Node's HTTP parser refuses (431 for oversized headers, 400 for a malformed request
 * line, header or chunk, 408 for a request too slow to arrive) never reach Fastify's routes or
 * hooks: they get the one error body of DESIGN §2 and an X-Request-Id here, written to the socket
 * by hand, after which the connection closes.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [code, message] = CLIENT_ERRORS[error.code ?? ''] ?? [
    'bad_request',
    'The request is not valid HTTP/1.1.',
  ];
  const status = ERROR_STATUS[code];
  const requestId = newId('req');
  const body = JSON.stringify(errorBody(code, message, requestId));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * Errors Fastify meets before a route's hooks run (a URL whose `%` escapes decode to no text, a
 * path segment longer than the router takes): the one error body, with the X-Request-Id the
 * onRequest hook would have set.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.header('X-Request-Id', request.id);
  if (error.code === 'FST_ERR_BAD_URL') {
    return sendError(reply, new AppError('bad_request', 'The URL is not valid.'));
  }
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    // Ids are short: a path segment over the router's 100 characters names nothing.
    return sendError(reply, new AppError('not_found', 'No such resource: a path segment is too long.'));
  }
  request.log.error({ err: error }, 'framework error');
  return sendError(reply, new AppError('internal_error', 'Something went wrong on our side.'));
}
