import type { LightMyRequestResponse } from 'fastify';
import type { Harness } from '../support/harness.js';

export const ORIGIN = 'http://localhost:80';

export function cookieOf(res: LightMyRequestResponse): string {
  const header = res.headers['set-cookie'];
  const first = Array.isArray(header) ? header[0] : header;
  return String(first).split(';')[0] ?? '';
}

export async function signIn(h: Harness, apiKey = h.org.apiKey): Promise<LightMyRequestResponse> {
  // Sign-in attempts are limited per address and second of the (manual) clock.
  h.clock.advance(1000);
  return h.app.inject({
    method: 'POST',
    url: '/dashboard/login',
    headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ api_key: apiKey }).toString(),
  });
}

export async function session(h: Harness, apiKey?: string): Promise<string> {
  const res = await signIn(h, apiKey);
  if (res.statusCode !== 303) throw new Error(`sign-in failed: ${res.statusCode} ${res.body}`);
  return cookieOf(res);
}

export function csrfOf(body: string): string {
  const match = /name="csrf_token" value="([^"]+)"/.exec(body);
  if (!match?.[1]) throw new Error('no CSRF token on the page');
  return match[1];
}

export async function page(h: Harness, cookie: string, url: string) {
  return h.app.inject({ method: 'GET', url, headers: { cookie } });
}

export async function post(
  h: Harness,
  cookie: string,
  url: string,
  fields: Record<string, string>,
  headers: Record<string, string> = { origin: ORIGIN },
) {
  return h.app.inject({
    method: 'POST',
    url,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(fields).toString(),
  });
}
