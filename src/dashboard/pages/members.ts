import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasRole } from '../../accounts/authorize.js';
import { setAccountSessionFlash, signInBrowser, tokenHash } from '../../accounts/sessions.js';
import { ROLES, type Role } from '../../accounts/roles.js';
import { AppError } from '../../errors.js';
import { serviceCtx } from '../../http/app-types.js';
import { acceptInvitation, lookupInvitation, type InvitationLookup } from '../../members/accept.js';
import {
  createInvitation,
  listInvitations,
  resendInvitation,
  revokeInvitation,
  type InvitationView,
} from '../../members/invitations.js';
import {
  changeMemberRole,
  getMember,
  listMembers,
  removeMember,
  type MemberView,
} from '../../members/members.js';
import type { OrgCtx } from '../../context.js';
import { dateTime } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField, planName } from '../layout.js';
import { dashboardCtx, field, redirectWithNotice, sendPage, session, type Form } from '../page-kit.js';
import { readCookie, SESSION_COOKIE, tokensMatch } from '../security.js';
import { resumeSession } from '../sessions.js';
import { select, textField } from './controls.js';

const ROLE_HINTS: Record<Role, string> = {
  owner: 'everything, members included',
  admin: 'settings, API keys, webhooks, task types and baselines',
  analyst: 'reads every figure, changes nothing',
};

/** The roles the actor may give: admins all but owner, owners all. */
function grantable(ctx: OrgCtx): Role[] {
  return ROLES.filter((r) => r !== 'owner' || hasRole(ctx, 'owner'));
}

/** Whether the actor may change or remove a member with `role` (owners only for owners). */
function manages(ctx: OrgCtx, role: Role): boolean {
  return hasRole(ctx, role === 'owner' ? 'owner' : 'admin');
}

const MAX_ID = 100;

function membersTable(ctx: OrgCtx, members: MemberView[], token: string, self: string | null): SafeHtml {
  const roles = grantable(ctx);
  return html`<div class="table-wrap">
    <table>
      <thead>
        <tr>
          <th scope="col">E-mail</th>
          <th scope="col">Name</th>
          <th scope="col">Role</th>
          <th scope="col">Since</th>
          <th scope="col">Last seen</th>
          ${hasRole(ctx, 'admin') ? html`<th scope="col"><span class="sr-only">Actions</span></th>` : ''}
        </tr>
      </thead>
      <tbody>
        ${members.map(
          (m) =>
            html`<tr>
              <td class="wrap">
                ${m.email}${m.account_id === self ? html` <span class="badge">you</span>` : ''}
              </td>
              <td class="wrap">${m.name ?? html`<span class="muted">—</span>`}</td>
              <td><span class="badge">${m.role}</span></td>
              <td>${dateTime(m.since)}</td>
              <td>
                ${m.last_seen_at === null ? html`<span class="muted">—</span>` : dateTime(m.last_seen_at)}
              </td>
              ${
                hasRole(ctx, 'admin')
                  ? html`<td>
                      ${
                        manages(ctx, m.role)
                          ? html`<div class="button-row">
                              <form
                                method="post"
                                action="/dashboard/members/${m.account_id}/role"
                                class="role-form"
                              >
                                ${csrfField(token)}
                                <label class="sr-only" for="role-${m.account_id}">Role of ${m.email}</label>
                                <select id="role-${m.account_id}" name="role">
                                  ${roles.map(
                                    (r) =>
                                      html`<option value="${r}" ${r === m.role ? html` selected` : ''}>
                                        ${r}
                                      </option>`,
                                  )}
                                </select>
                                <button
                                  type="submit"
                                  class="button quiet small"
                                  aria-label="Change the role of ${m.email}"
                                >
                                  Change role
                                </button>
                              </form>
                              <a
                                class="button danger small"
                                href="/dashboard/members/${m.account_id}/remove"
                                aria-label="Remove ${m.email}"
                                >Remove…</a
                              >
                            </div>`
                          : html`<span class="muted">Only an owner can change an owner</span>`
                      }
                    </td>`
                  : ''
              }
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

function invitationsTable(ctx: OrgCtx, invitations: InvitationView[], token: string): SafeHtml {
  if (invitations.length === 0) return html`<p class="muted">No pending invitations.</p>`;
  return html`<div class="table-wrap">
    <table>
      <thead>
        <tr>
          <th scope="col">E-mail</th>
          <th scope="col">Role</th>
          <th scope="col">Sent</th>
          <th scope="col">Link valid until</th>
          ${hasRole(ctx, 'admin') ? html`<th scope="col"><span class="sr-only">Actions</span></th>` : ''}
        </tr>
      </thead>
      <tbody>
        ${invitations.map(
          (i) =>
            html`<tr>
              <td class="wrap">${i.email}</td>
              <td><span class="badge">${i.role}</span></td>
              <td>
                ${dateTime(i.last_sent_at)}${i.sent_count > 1 ? html` <span class="muted">(${i.sent_count}×)</span>` : ''}
              </td>
              <td>${dateTime(i.expires_at)}</td>
              ${
                hasRole(ctx, 'admin')
                  ? html`<td>
                      ${
                        manages(ctx, i.role)
                          ? html`<div class="button-row">
                              <form method="post" action="/dashboard/members/invitations/${i.id}/resend">
                                ${csrfField(token)}
                                <button
                                  type="submit"
                                  class="button quiet small"
                                  aria-label="Resend the invitation of ${i.email}"
                                >
                                  Resend
                                </button>
                              </form>
                              <form method="post" action="/dashboard/members/invitations/${i.id}/revoke">
                                ${csrfField(token)}
                                <button
                                  type="submit"
                                  class="button danger small"
                                  aria-label="Revoke the invitation of ${i.email}"
                                >
                                  Revoke
                                </button>
                              </form>
                            </div>`
                          : ''
                      }
                    </td>`
                  : ''
              }
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

async function membersPage(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
  const ctx = dashboardCtx(app, request);
  const s = session(request);
  const members = (await listMembers({ ctx, limit: 100 })).data;
  const invitations = (await listInvitations({ ctx, limit: 100, status: 'pending' })).data;
  const body = html`<section class="panel">
      <h2>Members</h2>
      ${
        members.length === 0
          ? html`<p class="muted">No one has an account in this organisation yet.</p>`
          : membersTable(ctx, members, s.csrfToken, s.accountId)
      }
      <p class="muted">An organisation always keeps at least one owner.</p>
    </section>
    <section class="panel">
      <h2>Pending invitations</h2>
      ${invitationsTable(ctx, invitations, s.csrfToken)}
      ${
        hasRole(ctx, 'admin')
          ? html`<h3>Invite someone</h3>
              <form method="post" action="/dashboard/members/invite" class="form-grid">
                ${csrfField(s.csrfToken)}
                ${textField({ id: 'invite_email', name: 'email', label: 'E-mail', type: 'email', required: true })}
                ${select({
                  id: 'invite_role',
                  name: 'role',
                  label: 'Role',
                  options: grantable(ctx).map((r) => [r, r] as const),
                  value: 'analyst',
                })}
                <div class="field actions"><button type="submit" class="button">Send invitation</button></div>
              </form>
              <ul class="muted">
                ${grantable(ctx).map((r) => html`<li><strong>${r}</strong>: ${ROLE_HINTS[r]}</li>`)}
              </ul>
              <p class="muted">The invitation's link works once, for 7 days.</p>`
          : ''
      }
    </section>`;
  return sendPage(request, reply, { title: 'Members', section: 'Members', body });
}

/** An AppError as the one-line notice after a form; anything else is not ours to explain. */
function noticeOf(error: unknown, prefix: string): string {
  if (!(error instanceof AppError) || error.status >= 500) throw error;
  const d = error.details?.[0];
  return `${prefix}: ${d ? d.message : error.message}`;
}

function registerMemberControls(dash: FastifyInstance, app: FastifyInstance): void {
  const back = '/dashboard/members';
  dash.get('/members', async (request, reply) => membersPage(app, request, reply));

  dash.post<{ Body: Form }>('/members/invite', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    let notice: string;
    try {
      const { invitation, resent } = await createInvitation({
        ctx,
        input: { email: field(request.body, 'email').slice(0, 300), role: field(request.body, 'role') },
      });
      notice = `${resent ? 'Invitation sent again' : 'Invitation sent'} to ${invitation.email} (${invitation.role}).`;
    } catch (error) {
      notice = noticeOf(error, 'Not invited');
    }
    return redirectWithNotice(app, request, reply, back, notice);
  });

  dash.post<{ Params: { id: string } }>('/members/invitations/:id/resend', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    let notice: string;
    try {
      const { invitation } = await resendInvitation({ ctx, id: request.params.id.slice(0, MAX_ID) });
      notice = `Invitation sent again to ${invitation.email}; the previous link no longer works.`;
    } catch (error) {
      notice = noticeOf(error, 'Not sent');
    }
    return redirectWithNotice(app, request, reply, back, notice);
  });

  dash.post<{ Params: { id: string } }>('/members/invitations/:id/revoke', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    let notice: string;
    try {
      const invitation = await revokeInvitation({ ctx, id: request.params.id.slice(0, MAX_ID) });
      notice = `Invitation of ${invitation.email} revoked.`;
    } catch (error) {
      notice = noticeOf(error, 'Not revoked');
    }
    return redirectWithNotice(app, request, reply, back, notice);
  });

  dash.post<{ Params: { id: string }; Body: Form }>('/members/:id/role', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    let notice: string;
    try {
      const m = await changeMemberRole({
        ctx,
        accountId: request.params.id.slice(0, MAX_ID),
        role: field(request.body, 'role'),
      });
      notice = `${m.email} is now ${m.role}.`;
    } catch (error) {
      notice = noticeOf(error, 'Role not changed');
    }
    return redirectWithNotice(app, request, reply, back, notice);
  });

  dash.get<{ Params: { id: string } }>('/members/:id/remove', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const m = await getMember({ ctx, accountId: request.params.id.slice(0, MAX_ID) });
    const body = !manages(ctx, m.role)
      ? html`<section class="panel">
          <h2>Remove ${m.email} from ${ctx.org.name}</h2>
          <p>Only ${m.role === 'owner' ? 'an owner' : 'an owner or an admin'} can remove this member.</p>
          <p><a class="button quiet" href="${back}">Back to the members</a></p>
        </section>`
      : html`<section class="panel">
          <h2>Remove ${m.email} from ${ctx.org.name}?</h2>
          <p>Their sessions in this organisation end at their next request. They can be invited again.</p>
          <div class="button-row">
            <form method="post" action="/dashboard/members/${m.account_id}/remove">
              ${csrfField(session(request).csrfToken)}<button type="submit" class="button danger">
                Remove member
              </button>
            </form>
            <a class="button quiet" href="${back}">Cancel</a>
          </div>
        </section>`;
    return sendPage(request, reply, { title: 'Remove member', section: 'Members', body });
  });

  dash.post<{ Params: { id: string } }>('/members/:id/remove', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    let notice: string;
    try {
      const m = await getMember({ ctx, accountId: request.params.id.slice(0, MAX_ID) });
      await removeMember({ ctx, accountId: m.account_id });
      notice = `${m.email} removed.`;
    } catch (error) {
      notice = noticeOf(error, 'Not removed');
    }
    return redirectWithNotice(app, request, reply, back, notice);
  });
}

/** The frame of the invitation page, which needs no session (like the sign-in page). */
function invitationFrame(
  title: string,
  body: SafeHtml,
  status: 'error' | 'info' | null = null,
  message = '',
): string {
  return `<!doctype html>\n${
    html`<html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · Tally</title>
        <link rel="icon" href="/dashboard/assets/favicon.svg" type="image/svg+xml" />
        <link rel="stylesheet" href="/dashboard/assets/dashboard.css" />
      </head>
      <body class="login">
        <main id="main" class="login-box">
          <p class="brand">Tally</p>
          <h1>${title}</h1>
          ${status === null ? '' : html`<p class="${status === 'info' ? 'notice' : 'error'}" role="alert">${message}</p>`}
          ${body}
        </main>
      </body>
    </html>`.text
  }`;
}

const CLOSED: Record<Exclude<InvitationLookup['status'], 'pending'>, string> = {
  expired:
    'This invitation has expired: its link worked for 7 days. Ask the person who invited you to send it again.',
  revoked: 'This invitation was revoked, so its link no longer works. Ask the person who invited you.',
  accepted: 'This invitation has already been used. Sign in to open the dashboard.',
  unknown:
    'This invitation link is not valid. It may have been replaced by a newer invitation e-mail: use the latest one.',
};

function invitationPage(
  lookup: InvitationLookup,
  token: string,
  signedIn: { accountId: string; email: string | null; csrfToken: string } | null,
  message: { status: 'error' | 'info'; text: string } | null = null,
  name = '',
): string {
  if (lookup.status !== 'pending') {
    return invitationFrame(
      'Invitation not available',
      html`<p>${CLOSED[lookup.status]}</p>
        <p><a href="/dashboard/login">Go to the sign-in page</a></p>`,
      message?.status ?? null,
      message?.text ?? '',
    );
  }
  const { invitation, org, account } = lookup;
  const role = invitation.role as Role;
  const intro = html`<p>
      You are invited to join <strong>${org.name}</strong> (${planName(org.plan)} plan) as
      <strong>${role}</strong>: ${ROLE_HINTS[role]}.
    </p>
    <p class="muted">Invitation for ${invitation.email}</p>`;
  const action = `/dashboard/invitations/${token}`;
  let form: SafeHtml;
  if (account === null) {
    form = html`<form method="post" action="${action}">
      <input type="hidden" name="intent" value="create" />
      <label for="name">Your name</label>
      <input id="name" name="name" autocomplete="name" maxlength="200" value="${name}" />
      <label for="password">Choose a password</label>
      <input
        id="password"
        name="password"
        type="password"
        autocomplete="new-password"
        minlength="12"
        required
        aria-describedby="password-hint"
      />
      <small id="password-hint" class="muted"
        >At least 12 characters; not your e-mail, not a common password.</small
      >
      <label for="password_again">Repeat the password</label>
      <input id="password_again" name="password_again" type="password" autocomplete="new-password" required />
      <button type="submit" class="button">Create account and join</button>
    </form>`;
  } else if (signedIn !== null && signedIn.accountId === account.id) {
    form = html`<form method="post" action="${action}">
      <input type="hidden" name="intent" value="accept" />
      <input type="hidden" name="csrf_token" value="${signedIn.csrfToken}" />
      <button type="submit" class="button">Join ${org.name}</button>
    </form>`;
  } else {
    form = html`<p>
        ${invitation.email} already has a Tally account.
        ${
          signedIn !== null
            ? html`You are signed in as ${signedIn.email ?? 'someone else'}: sign out, then sign in as
              ${invitation.email}.`
            : html`Sign in as ${invitation.email}, then open this link again (or press the button) to join.`
        }
      </p>
      <form method="post" action="${action}">
        <input type="hidden" name="intent" value="accept" />
        <button type="submit" class="button">I am signed in: join ${org.name}</button>
      </form>
      <p><a href="/dashboard/login">Go to the sign-in page</a></p>`;
  }
  return invitationFrame(
    'Join an organisation',
    html`${intro}${form}`,
    message?.status ?? null,
    message?.text ?? '',
  );
}

/**
 * The invitation link: open without a session. A new person sets a name and password; an
 * existing account joins from its own session. Accepting signs the person in. Its pages answer
 * 200 whatever they say (a used link, a refused password): a browser logs a 4xx page as an error.
 */
function registerInvitationPages(dash: FastifyInstance, app: FastifyInstance): void {
  const open = { config: { dashboardPublic: true } };

  async function signedInAs(request: FastifyRequest) {
    const resumed = await resumeSession({
      ctx: serviceCtx(app.tally),
      token: readCookie(request, SESSION_COOKIE),
    });
    if (!('session' in resumed) || resumed.session.accountId === null) return null;
    const s = resumed.session;
    return { accountId: s.accountId as string, email: s.email, csrfToken: s.csrfToken };
  }

  dash.get<{ Params: { token: string } }>('/invitations/:token', open, async (request, reply) => {
    const ctx = serviceCtx(app.tally);
    const lookup = await lookupInvitation(ctx, request.params.token);
    const page = invitationPage(lookup, request.params.token, await signedInAs(request));
    return reply.type('text/html; charset=utf-8').send(page);
  });

  dash.post<{ Params: { token: string }; Body: Form }>(
    '/invitations/:token',
    open,
    async (request, reply) => {
      const ctx = serviceCtx(app.tally);
      const token = request.params.token;
      const form = request.body instanceof Map ? request.body : (new Map() as Form);
      const signedIn = await signedInAs(request);
      const again = async (text: string) => {
        const lookup = await lookupInvitation(ctx, token);
        const page = invitationPage(
          lookup,
          token,
          signedIn,
          { status: 'error', text },
          field(form, 'name').slice(0, 200),
        );
        return reply.type('text/html; charset=utf-8').send(page);
      };
      let acceptance: Parameters<typeof acceptInvitation>[0]['acceptance'];
      if (field(form, 'intent') === 'create') {
        const password = field(form, 'password');
        if (password !== field(form, 'password_again'))
          return again('The two passwords differ. Type them again.');
        acceptance = { kind: 'new', name: field(form, 'name'), password };
      } else {
        if (signedIn === null || !tokensMatch(signedIn.csrfToken, field(form, 'csrf_token'))) {
          const lookup = await lookupInvitation(ctx, token);
          const email = lookup.status === 'pending' ? lookup.invitation.email : 'the invited address';
          return again(`Sign in as ${email} first, then open the invitation's link again.`);
        }
        acceptance = { kind: 'signed_in', accountId: signedIn.accountId };
      }
      let accepted;
      try {
        accepted = await acceptInvitation({ ctx, token, acceptance });
      } catch (error) {
        if (!(error instanceof AppError) || error.status >= 500) throw error;
        const d = error.details?.[0];
        return again(d ? d.message : error.message);
      }
      const opened = await signInBrowser({
        ctx,
        request,
        reply,
        accountId: accepted.accountId,
        orgId: accepted.org.id,
        method: 'invitation',
      });
      await setAccountSessionFlash(
        ctx,
        tokenHash(opened.token),
        `Welcome: you joined ${accepted.org.name} as ${accepted.role}.`,
      );
      return reply.redirect('/dashboard', 303);
    },
  );
}

export function registerMemberPages(dash: FastifyInstance, app: FastifyInstance): void {
  registerMemberControls(dash, app);
  registerInvitationPages(dash, app);
}
