import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasRole } from '../accounts/authorize.js';
import type { OrgCtx } from '../context.js';
import { AppError } from '../errors.js';
import { serviceCtx } from '../http/app-types.js';
import type { html } from './html.js';
import { page, type Section } from './layout.js';
import { setFlash, type DashboardSession } from './sessions.js';

// What every dashboard page uses: its verb context, its session, its form fields and how it
// answers. The registry (routes.ts) imports the pages, so the pages take these from here.

declare module 'fastify' {
  interface FastifyRequest {
    dashboardSession: DashboardSession | null;
  }
  interface FastifyContextConfig {
    /** A dashboard route open without a session (sign-in, assets). */
    dashboardPublic?: boolean;
  }
}

/** A submitted form: every field with all its values (checkbox groups repeat a name). */
export type Form = Map<string, string[]>;

export function field(form: Form, name: string): string {
  return form.get(name)?.[0] ?? '';
}

export function fields(form: Form, name: string): string[] {
  return form.get(name) ?? [];
}

/** A page's verb context; a GET reads on the read connection, as the API's do (http/app-types.ts orgCtx). */
export function dashboardCtx(app: FastifyInstance, request: FastifyRequest): OrgCtx {
  const session = request.dashboardSession;
  if (!session) throw new AppError('missing_authorization', 'Sign in first.');
  const { storage, clock, config } = app.tally;
  return {
    db: request.method === 'GET' ? (storage.reader ?? storage.db) : storage.db,
    engine: storage.engine,
    clock,
    config,
    storage,
    org: session.org,
    actorKeyId: session.keyId,
    actor: session.actor,
  };
}

export function session(request: FastifyRequest): DashboardSession {
  const s = request.dashboardSession;
  if (!s) throw new AppError('missing_authorization', 'Sign in first.');
  return s;
}

/** Sends one signed-in page. */
export function sendPage(
  request: FastifyRequest,
  reply: FastifyReply,
  input: { title: string; section: Section; body: ReturnType<typeof html>; status?: number },
) {
  const s = session(request);
  const actor = s.actor;
  const person =
    actor.kind === 'person' && s.email !== null
      ? { email: s.email, role: actor.role, memberships: s.memberships }
      : null;
  return reply
    .code(input.status ?? 200)
    .type('text/html; charset=utf-8')
    .send(
      page({
        ...input,
        org: s.org,
        csrfToken: s.csrfToken,
        flash: s.flash,
        person,
        mayChange: hasRole({ actor, actorKeyId: s.keyId }, 'admin'),
      }),
    );
}

/** After a form: a one-time notice and a 303 to the page to show next (POST/redirect/GET). */
export async function redirectWithNotice(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  location: string,
  notice: string,
) {
  await setFlash(serviceCtx(app.tally), session(request), notice);
  return reply.redirect(location, 303);
}

/** The query string of a dashboard URL, as given (repeated names kept). */
export function queryOf(request: FastifyRequest): URLSearchParams {
  const q = request.url.indexOf('?');
  return new URLSearchParams(q < 0 ? '' : request.url.slice(q + 1));
}
