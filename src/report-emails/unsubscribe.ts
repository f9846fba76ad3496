import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { serviceCtx } from '../http/app-types.js';
import { html, type SafeHtml } from '../dashboard/html.js';
import { setSecurityHeaders } from '../dashboard/security.js';

/** The signature of a recipient's unsubscribe link, keyed with its schedule's secret. */
export function unsubscribeToken(secret: string, recipientId: string): string {
  return createHmac('sha256', secret).update(`unsubscribe:${recipientId}`).digest('base64url');
}

/** The link that unsubscribes one recipient, without signing in (RFC 8058 one-click too). */
export function unsubscribeUrl(publicUrl: string, secret: string, recipientId: string): string {
  const query = new URLSearchParams({ r: recipientId, t: unsubscribeToken(secret, recipientId) });
  return `${publicUrl}/unsubscribe?${query.toString()}`;
}

function page(title: string, body: SafeHtml): string {
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
          ${body}
        </main>
      </body>
    </html>`.text
  }`;
}

interface Found {
  id: string;
  email: string;
  unsubscribedAt: number | null;
  frequency: string;
  orgName: string;
}

/** The recipient a link names, when its signature is right; null otherwise. */
async function recipientOf(app: FastifyInstance, request: FastifyRequest): Promise<Found | null> {
  const query = request.query as Record<string, unknown>;
  const id = typeof query.r === 'string' ? query.r.slice(0, 100) : '';
  const token = typeof query.t === 'string' ? query.t.slice(0, 100) : '';
  if (id === '' || token === '') return null;
  const row = await app.tally.storage.db
    .selectFrom('report_recipients')
    .innerJoin('report_schedules', 'report_schedules.id', 'report_recipients.schedule_id')
    .innerJoin('organizations', 'organizations.id', 'report_schedules.org_id')
    .select([
      'report_recipients.id',
      'report_recipients.email',
      'report_recipients.unsubscribed_at',
      'report_schedules.secret',
      'report_schedules.frequency',
      'organizations.name',
    ])
    .where('report_recipients.id', '=', id)
    .executeTakeFirst();
  if (!row) return null;
  const expected = Buffer.from(unsubscribeToken(row.secret, row.id));
  const given = Buffer.from(token);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return null;
  return {
    id: row.id,
    email: row.email,
    unsubscribedAt: row.unsubscribed_at === null ? null : Number(row.unsubscribed_at),
    frequency: row.frequency,
    orgName: row.name,
  };
}

function invalid(reply: FastifyReply) {
  return reply
    .code(404)
    .type('text/html; charset=utf-8')
    .send(
      page(
        'Link not valid',
        html`<p>
          This unsubscribe link is not valid any more: the report may have been removed, or the link was cut
          short. Ask an administrator of your organisation to take you off the list.
        </p>`,
      ),
    );
}

/**
 * `/unsubscribe?r=<recipient>&t=<signature>`: the link in every report e-mail. GET shows what
 * it will do and asks to confirm (mail scanners follow links, so a GET changes nothing); POST
 * unsubscribes, from that page or from a mail client's one-click (RFC 8058). The signature is
 * the credential: no session, no CSRF token.
 */
export function registerUnsubscribe(app: FastifyInstance): void {
  void app.register(async (scope) => {
    scope.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, hide: true };
    });
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_r, _b, done) =>
      done(null, {}),
    );
    scope.addHook('onRequest', async (_request, reply) => setSecurityHeaders(reply));

    scope.get('/unsubscribe', async (request, reply) => {
      const found = await recipientOf(app, request);
      if (!found) return invalid(reply);
      const body =
        found.unsubscribedAt !== null
          ? html`<p class="notice" role="status">
              ${found.email} no longer receives the ${found.frequency} report of ${found.orgName}.
            </p>`
          : html`<p>
                Stop sending the ${found.frequency} Tally report of <strong>${found.orgName}</strong> to
                <strong>${found.email}</strong>?
              </p>
              <form method="post" action="${request.url}">
                <button type="submit" class="button">Unsubscribe</button>
              </form>`;
      return reply.type('text/html; charset=utf-8').send(page('Unsubscribe', body));
    });

    scope.post('/unsubscribe', async (request, reply) => {
      const found = await recipientOf(app, request);
      if (!found) return invalid(reply);
      if (found.unsubscribedAt === null) {
        await app.tally.storage.db
          .updateTable('report_recipients')
          .set({ unsubscribed_at: serviceCtx(app.tally).clock.now().getTime() })
          .where('id', '=', found.id)
          .where('unsubscribed_at', 'is', null)
          .execute();
      }
      return reply
        .type('text/html; charset=utf-8')
        .send(
          page(
            'Unsubscribed',
            html`<p class="notice" role="status">
              ${found.email} no longer receives the ${found.frequency} report of ${found.orgName}.
            </p>`,
          ),
        );
    });
  });
}
