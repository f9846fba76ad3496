import type { FastifyRequest } from 'fastify';

/** What a redacted value is logged as. */
export const REDACTED = '[REDACTED]';

/** Query parameters whose value is a secret by their name (`api_key`, `access_token`, `password`…). */
const SECRET_NAME = /key|token|secret|passw(or)?d|pwd|auth|signature|credential|session/i;

/** Values that are secrets by their shape: our API keys and webhook secrets, and JWTs. */
const SECRET_VALUE = /tally_live_|whsec_|eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\./;

/**
 * `text` percent-decoded as a query part (`+` is a space), again while that changes it (a
 * client that encoded twice), a few times at most; as far as it decodes.
 */
function decoded(text: string): string {
  let current = text;
  for (let i = 0; i < 3; i++) {
    let next: string;
    try {
      next = decodeURIComponent(current.replaceAll('+', ' '));
    } catch {
      return current;
    }
    if (next === current) return current;
    current = next;
  }
  return current;
}

function redactParameter(part: string): string {
  const equals = part.indexOf('=');
  const name = equals < 0 ? part : part.slice(0, equals);
  const value = equals < 0 ? '' : part.slice(equals + 1);
  if (SECRET_NAME.test(decoded(name)) && value !== '') return `${name}=${REDACTED}`;
  if (SECRET_VALUE.test(decoded(part))) return equals < 0 ? REDACTED : `${name}=${REDACTED}`;
  return part;
}

/**
 * A request URL fit for the logs: the values of query parameters named like secrets, and every
 * path segment or query part that holds something shaped like one, are replaced by
 * `[REDACTED]`; the rest stays as sent. A client that puts its API key in a query string by
 * mistake must not find it in every log line and log store after.
 */
export function redactUrl(url: string): string {
  const question = url.indexOf('?');
  const path = question < 0 ? url : url.slice(0, question);
  const safePath = path
    .split('/')
    .map((segment) => (SECRET_VALUE.test(decoded(segment)) ? REDACTED : segment))
    .join('/');
  if (question < 0) return safePath;
  const query = url
    .slice(question + 1)
    .split('&')
    .map(redactParameter)
    .join('&');
  return `${safePath}?${query}`;
}

/**
 * Fastify's request serializer (what `incoming request` lines show of a request, with the same
 * fields as its default) with the URL redacted.
 */
export function serializeRequest(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
