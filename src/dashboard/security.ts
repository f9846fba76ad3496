import type { FastifyReply, FastifyRequest } from 'fastify';
import { timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'tally_session';

/** No inline script or style anywhere: everything comes from /dashboard/assets/. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

export function setSecurityHeaders(reply: FastifyReply): void {
  reply.header('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  reply.header('X-Content-Type-Options', 'nosniff');
  reply.header('Referrer-Policy', 'same-origin');
  reply.header('X-Frame-Options', 'DENY');
  reply.header('Cache-Control', 'no-store');
}

export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function cookieAttributes(request: FastifyRequest): string {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  return `Path=/dashboard; HttpOnly; SameSite=Strict${secure}`;
}

export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, token: string): void {
  reply.header('Set-Cookie', `${SESSION_COOKIE}=${token}; ${cookieAttributes(request)}`);
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('Set-Cookie', `${SESSION_COOKIE}=; ${cookieAttributes(request)}; Max-Age=0`);
}

/**
 * A state-changing request must come from a page of this very origin: the Origin header (or,
 * without it, the Referer) names this host. Requests naming neither are refused too.
 */
export function sameOrigin(request: FastifyRequest): boolean {
  const expected = originOf(`${request.protocol}://${request.host}`);
  if (expected === null) return false;
  const origin = request.headers.origin;
  if (typeof origin === 'string' && origin !== '' && origin !== 'null') return originOf(origin) === expected;
  const referer = request.headers.referer;
  return typeof referer === 'string' && referer !== '' && originOf(referer) === expected;
}

/** `scheme://host[:port]` with the default port dropped, as browsers write Origin. */
function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

export function tokensMatch(expected: string, presented: unknown): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}
