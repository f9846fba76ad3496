import type { FastifyInstance } from 'fastify';
import { hasRole } from '../../accounts/authorize.js';
import { planAtLeast } from '../../billing/plans.js';
import { AppError } from '../../errors.js';
import { listDeliveries } from '../../webhooks/delivery-log.js';
import { SUBSCRIBABLE_EVENT_TYPES, type SubscribableEventType } from '../../webhooks/event-types.js';
import {
  createWebhook,
  deleteWebhook,
  getWebhookRow,
  listWebhooks,
  updateWebhook,
  webhookView,
  type WebhookView,
} from '../../webhooks/subscriptions.js';
import { sendTestPing } from '../../webhooks/test-ping.js';
import { count, dateTime } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField, planGate } from '../layout.js';
import {
  dashboardCtx,
  field,
  fields,
  queryOf,
  redirectWithNotice,
  sendPage,
  session,
  type Form,
} from '../page-kit.js';
import { textField } from './controls.js';

type Delivery = Awaited<ReturnType<typeof listDeliveries>>['data'][number];

const STATUS_WORDS: Record<string, string> = {
  active: 'Active',
  failing: 'Failing',
  deactivated: 'Deactivated',
};

function statusBadge(status: string): SafeHtml {
  const icon = status === 'active' ? '●' : status === 'failing' ? '▲' : '■';
  return html`<span class="badge status-${status}"
    ><span aria-hidden="true">${icon} </span>${STATUS_WORDS[status] ?? status}</span
  >`;
}

function deliveryStatus(d: Delivery, webhookStatus: string): string {
  // The worker sends nothing to a deactivated webhook but its test pings.
  if (d.status === 'pending' && webhookStatus === 'deactivated' && d.event_type !== 'test.ping')
    return 'Held until reactivated';
  if (d.status === 'pending')
    return d.attempt_count === 0 ? 'Queued' : `Retrying (attempt ${d.attempt_count} failed)`;
  if (d.status === 'succeeded') return 'Delivered';
  if (d.status === 'failed') return 'Failed';
  return d.status[0]?.toUpperCase() + d.status.slice(1);
}

function eventTypeBoxes(selected: readonly string[], prefix: string): SafeHtml {
  return html`<fieldset class="field">
    <legend>Event types</legend>
    ${SUBSCRIBABLE_EVENT_TYPES.map(
      (t) =>
        html`<label class="check"
          ><input
            type="checkbox"
            name="event_types"
            value="${t}"
            id="${prefix}-${t}"
            ${selected.includes(t) ? html` checked` : ''}
          />
          ${t}</label
        >`,
    )}
  </fieldset>`;
}

function eventTypesOf(form: Form): SubscribableEventType[] {
  const chosen = fields(form, 'event_types').filter((t): t is SubscribableEventType =>
    (SUBSCRIBABLE_EVENT_TYPES as readonly string[]).includes(t),
  );
  if (chosen.length === 0) throw new AppError('validation_error', 'Choose at least one event type.');
  return [...new Set(chosen)];
}

function refusal(error: unknown): string {
  if (error instanceof AppError && error.status < 500) {
    const d = error.details?.[0];
    return d ? `${d.path.replace('/body/', '')} ${d.message}` : error.message;
  }
  throw error;
}

function attemptsTable(d: Delivery): SafeHtml {
  if (d.attempts.length === 0) return html`<p class="muted">No attempt yet.</p>`;
  return html`<div class="table-wrap">
    <table>
      <thead>
        <tr>
          <th scope="col" class="num">Attempt</th>
          <th scope="col">Time</th>
          <th scope="col">Result</th>
          <th scope="col" class="num">Status code</th>
          <th scope="col" class="num">Duration</th>
          <th scope="col">Response body / error</th>
        </tr>
      </thead>
      <tbody>
        ${d.attempts.map(
          (a) =>
            html`<tr>
              <td class="num">${a.attempt}</td>
              <td>${dateTime(a.started_at)}</td>
              <td>
                ${a.succeeded ? html`<span class="badge status-active">✓ Succeeded</span>` : html`<span class="badge status-failing">✗ Failed</span>`}
              </td>
              <td class="num">${a.status_code ?? '—'}</td>
              <td class="num">${count(a.duration_ms)} ms</td>
              <td class="wrap">
                ${a.error ? html`<p class="error-text">${a.error}</p>` : ''}
                ${a.response_body ? html`<pre class="code body">${a.response_body}</pre>` : ''}
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

export function registerWebhookPages(dash: FastifyInstance, app: FastifyInstance): void {
  const gate = (request: Parameters<typeof dashboardCtx>[1]) => {
    const ctx = dashboardCtx(app, request);
    return planAtLeast(ctx.org.plan, 'pro') ? null : planGate('Webhooks', 'Pro', ctx.org);
  };

  const listPage = async (
    request: Parameters<typeof dashboardCtx>[1],
    reply: Parameters<typeof sendPage>[1],
    created: { webhook: WebhookView; secret: string } | null,
  ) => {
    const ctx = dashboardCtx(app, request);
    const gated = gate(request);
    if (gated) return sendPage(request, reply, { title: 'Webhooks', section: 'Webhooks', body: gated });
    const list = await listWebhooks({ ctx, limit: 100 });
    const last = await Promise.all(list.data.map((w) => listDeliveries({ ctx, webhookId: w.id, limit: 1 })));
    const token = session(request).csrfToken;
    const secretPanel = created
      ? html`<section class="panel secret" aria-labelledby="secret-title">
          <h2 id="secret-title">Signing secret of ${created.webhook.url}</h2>
          <p>
            Copy it now: <strong>it is shown only this once.</strong> Your receiver verifies signatures with
            it.
          </p>
          <div class="copyline">
            <code id="new-secret">${created.secret}</code>
            <button type="button" class="button quiet" data-copy="new-secret">Copy secret</button>
          </div>
        </section>`
      : '';
    const body = html`${secretPanel}
      ${
        list.data.length === 0
          ? html`<p class="muted">
              No webhooks yet.<span data-change> Add one to receive events as they are tracked.</span>
            </p>`
          : html`<div class="table-wrap list">
              <table>
                <thead>
                  <tr>
                    <th scope="col">URL</th>
                    <th scope="col">Status</th>
                    <th scope="col">Event types</th>
                    <th scope="col" class="num">Failures in a row</th>
                    <th scope="col">Last delivery</th>
                  </tr>
                </thead>
                <tbody>
                  ${list.data.map((w, i) => {
                    const d = last[i]?.data[0];
                    return html`<tr>
                      <td class="wrap">
                        <a href="/dashboard/webhooks/${w.id}">${w.url}</a
                        >${w.description ? html`<br /><span class="muted">${w.description}</span>` : ''}
                      </td>
                      <td>${statusBadge(w.status)}</td>
                      <td class="wrap">${w.event_types.join(', ')}</td>
                      <td class="num">${count(w.consecutive_failures)}</td>
                      <td>
                        ${d ? html`${deliveryStatus(d, w.status)}, ${dateTime(d.updated_at)}` : html`<span class="muted">None yet</span>`}
                      </td>
                    </tr>`;
                  })}
                </tbody>
              </table>
            </div>`
      }
      <section class="panel" data-change>
        <h2>Add a webhook</h2>
        <form method="post" action="/dashboard/webhooks" class="form-grid">
          ${csrfField(token)}
          ${textField({ id: 'url', name: 'url', label: 'Endpoint URL', type: 'url', required: true, wide: true, hint: 'https://…; the secret to verify signatures is shown once after saving' })}
          ${textField({ id: 'description', name: 'description', label: 'Description (optional)' })}
          ${eventTypeBoxes(['event.created'], 'new')}
          <div class="field actions"><button type="submit" class="button">Add webhook</button></div>
        </form>
      </section>`;
    return sendPage(request, reply, {
      title: 'Webhooks',
      section: 'Webhooks',
      body,
      status: created ? 201 : 200,
    });
  };

  dash.get('/webhooks', async (request, reply) => listPage(request, reply, null));

  // The creation answers with the page itself, not a redirect: the secret exists only in this
  // response and is never stored for a later page.
  dash.post<{ Body: Form }>('/webhooks', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    if (gate(request)) return reply.redirect('/dashboard/webhooks', 303);
    try {
      const description = field(request.body, 'description').trim();
      const created = await createWebhook({
        ctx,
        input: {
          url: field(request.body, 'url').trim().slice(0, 2048),
          event_types: eventTypesOf(request.body),
          ...(description === '' ? {} : { description: description.slice(0, 500) }),
        },
      });
      const { secret, ...webhook } = created;
      return listPage(request, reply, { webhook, secret });
    } catch (error) {
      return redirectWithNotice(app, request, reply, '/dashboard/webhooks', `Not saved: ${refusal(error)}`);
    }
  });

  dash.get<{ Params: { id: string } }>('/webhooks/:id', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const gated = gate(request);
    if (gated) return sendPage(request, reply, { title: 'Webhooks', section: 'Webhooks', body: gated });
    const w = webhookView(await getWebhookRow({ ctx, id: request.params.id.slice(0, 100) }));
    const cursor = queryOf(request).get('cursor') ?? undefined;
    const log = await listDeliveries({ ctx, webhookId: w.id, limit: 20, ...(cursor ? { cursor } : {}) });
    const token = session(request).csrfToken;
    const base = `/dashboard/webhooks/${w.id}`;
    // Refresh only while a test ping waits for its first attempt: other deliveries of a
    // deactivated webhook may wait for good.
    const pending = log.data.some(
      (d) => d.event_type === 'test.ping' && d.status === 'pending' && d.attempt_count === 0,
    );
    const body = html`<p><a href="/dashboard/webhooks">← All webhooks</a></p>
      <section class="panel">
        <h2 class="wrap">${w.url}</h2>
        <p>
          ${statusBadge(w.status)}
          <span class="muted">${count(w.consecutive_failures)} failed deliveries in a row</span>
        </p>
        ${w.description ? html`<p>${w.description}</p>` : ''}
        <p>Receives <span class="wrap">${w.event_types.join(', ')}</span>.</p>
        ${
          w.status === 'deactivated'
            ? html`<p class="banner warn">
                This webhook receives nothing until it is reactivated.<span data-change>
                  Send a test ping first to check the receiver.</span
                >
              </p>`
            : ''
        }
        <div class="button-row" data-change>
          <form method="post" action="${base}/test">
            ${csrfField(token)}<button type="submit" class="button">Send test ping</button>
          </form>
          ${
            w.status !== 'active'
              ? html`<form method="post" action="${base}/reactivate">
                  ${csrfField(token)}<button type="submit" class="button">Reactivate</button>
                </form>`
              : ''
          }
          <a class="button danger" href="${base}/delete">Delete…</a>
        </div>
      </section>
      <section class="panel" data-change>
        <h2>Edit</h2>
        <form method="post" action="${base}" class="form-grid">
          ${csrfField(token)}
          ${textField({ id: 'url', name: 'url', label: 'Endpoint URL', type: 'url', required: true, wide: true, value: w.url })}
          ${textField({ id: 'description', name: 'description', label: 'Description', value: w.description ?? '' })}
          ${eventTypeBoxes(w.event_types, 'edit')}
          <div class="field actions"><button type="submit" class="button">Save changes</button></div>
        </form>
      </section>
      <section class="panel">
        <h2>Delivery log</h2>
        ${
          pending
            ? html`<p class="muted" data-refresh="3" role="status">
                A delivery is queued; this page refreshes until its result is known.
                <a href="${base}">Refresh now</a>
              </p>`
            : ''
        }
        ${
          log.data.length === 0
            ? html`<p class="muted">No deliveries yet.</p>`
            : log.data.map(
                (d, i) =>
                  html`<details class="delivery" ${i < 3 || d.status === 'failed' ? html` open` : ''}>
                    <summary>
                      <strong>${d.event_type}</strong>
                      <span class="muted"
                        >· ${deliveryStatus(d, w.status)} · ${dateTime(d.created_at)} ·
                        ${count(d.attempt_count)} ${d.attempt_count === 1 ? 'attempt' : 'attempts'}</span
                      >
                    </summary>
                    <p class="muted">
                      <code>${d.message_id}</code>${
                        // A held delivery has no next attempt until the webhook is reactivated.
                        d.next_attempt_at && deliveryStatus(d, w.status) !== 'Held until reactivated'
                          ? html` · next attempt ${dateTime(d.next_attempt_at)}`
                          : ''
                      }
                    </p>
                    ${attemptsTable(d)}
                  </details>`,
              )
        }
        ${cursor ? html`<p><a href="${base}">Newest deliveries</a></p>` : ''}
        ${
          log.next_cursor
            ? html`<p>
                <a class="button quiet" href="${base}?cursor=${log.next_cursor}">Older deliveries</a>
              </p>`
            : ''
        }
      </section>`;
    return sendPage(request, reply, { title: 'Webhook', section: 'Webhooks', body });
  });

  dash.post<{ Params: { id: string }; Body: Form }>('/webhooks/:id', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    if (gate(request)) return reply.redirect('/dashboard/webhooks', 303);
    const back = `/dashboard/webhooks/${encodeURIComponent(request.params.id)}`;
    try {
      const description = field(request.body, 'description').trim();
      await updateWebhook({
        ctx,
        id: request.params.id,
        input: {
          url: field(request.body, 'url').trim().slice(0, 2048),
          event_types: eventTypesOf(request.body),
          description: description === '' ? null : description.slice(0, 500),
        },
      });
      return redirectWithNotice(app, request, reply, back, 'Webhook saved.');
    } catch (error) {
      return redirectWithNotice(app, request, reply, back, `Not saved: ${refusal(error)}`);
    }
  });

  dash.post<{ Params: { id: string } }>('/webhooks/:id/test', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    if (gate(request)) return reply.redirect('/dashboard/webhooks', 303);
    const sent = await sendTestPing({ ctx, id: request.params.id });
    return redirectWithNotice(
      app,
      request,
      reply,
      `/dashboard/webhooks/${encodeURIComponent(request.params.id)}`,
      `Test ping ${sent.message_id} queued; its result appears in the delivery log below.`,
    );
  });

  dash.post<{ Params: { id: string } }>('/webhooks/:id/reactivate', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    if (gate(request)) return reply.redirect('/dashboard/webhooks', 303);
    await updateWebhook({ ctx, id: request.params.id, input: { status: 'active' } });
    return redirectWithNotice(
      app,
      request,
      reply,
      `/dashboard/webhooks/${encodeURIComponent(request.params.id)}`,
      'Webhook reactivated; new events are delivered again.',
    );
  });

  dash.get<{ Params: { id: string } }>('/webhooks/:id/delete', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const gated = gate(request);
    if (gated) return sendPage(request, reply, { title: 'Webhooks', section: 'Webhooks', body: gated });
    const w = webhookView(await getWebhookRow({ ctx, id: request.params.id.slice(0, 100) }));
    const body = html`${
        hasRole(ctx, 'admin')
          ? ''
          : html`<p>
              Only an owner or an admin can delete a webhook.
              <a href="/dashboard/webhooks/${w.id}">Back to the webhook</a>
            </p>`
      }
      <section class="panel" data-change>
        <h2>Delete the webhook for <span class="wrap">${w.url}</span>?</h2>
        <p>Its pending deliveries are canceled and it receives nothing more. This cannot be undone.</p>
        <div class="button-row">
          <form method="post" action="/dashboard/webhooks/${w.id}/delete">
            ${csrfField(session(request).csrfToken)}<button type="submit" class="button danger">
              Delete webhook
            </button>
          </form>
          <a class="button quiet" href="/dashboard/webhooks/${w.id}">Cancel</a>
        </div>
      </section>`;
    return sendPage(request, reply, { title: 'Delete webhook', section: 'Webhooks', body });
  });

  dash.post<{ Params: { id: string } }>('/webhooks/:id/delete', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    if (gate(request)) return reply.redirect('/dashboard/webhooks', 303);
    await deleteWebhook({ ctx, id: request.params.id });
    return redirectWithNotice(app, request, reply, '/dashboard/webhooks', 'Webhook deleted.');
  });
}
