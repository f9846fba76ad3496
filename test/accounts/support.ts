import type { LightMyRequestResponse } from 'fastify';
import type { Role } from '../../src/accounts/roles.js';
import { addMembership, createAccount } from '../../src/accounts/store.js';
import type { Harness, TestOrg } from '../support/harness.js';
import { cookieOf, ORIGIN } from '../dashboard/support.js';

export const PASSWORD = 'correct horse battery staple';

/** A person with `role` in `org` (the harness's organisation when absent) and the test password. */
export async function person(
  h: Harness,
  email: string,
  role: Role,
  org: TestOrg = h.org,
): Promise<{ accountId: string; email: string }> {
  const account = await createAccount({ ctx: h.ctx, email, password: PASSWORD });
  await addMembership({ ctx: h.ctx, orgId: org.id, accountId: account.id, role });
  return { accountId: account.id, email: account.email };
}

let nextAddress = 1;

/**
 * Posts the sign-in form with e-mail and password from `ip`, or else from an address of its own
 * (so failures count only against the e-mail, and the per-address limit never bites); the clock
 * moves `advanceMs` first (default 0).
 */
export async function passwordSignIn(
  h: Harness,
  email: string,
  password = PASSWORD,
  options: { ip?: string; cookie?: string; advanceMs?: number } = {},
): Promise<LightMyRequestResponse> {
  h.clock.advance(options.advanceMs ?? 0);
  const ip = options.ip ?? `10.${Math.floor(nextAddress / 250) % 250}.${nextAddress++ % 250}.7`;
  return h.app.inject({
    method: 'POST',
    url: '/dashboard/login',
    remoteAddress: ip,
    headers: {
      origin: ORIGIN,
      'content-type': 'application/x-www-form-urlencoded',
      ...(options.cookie ? { cookie: options.cookie } : {}),
    },
    payload: new URLSearchParams({ email, password }).toString(),
  });
}

/** The cookie of a person's fresh session. */
export async function personSession(h: Harness, email: string, password = PASSWORD): Promise<string> {
  const res = await passwordSignIn(h, email, password);
  if (res.statusCode !== 303) throw new Error(`sign-in failed: ${res.statusCode} ${res.body}`);
  return cookieOf(res);
}
