import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasRole } from '../../accounts/authorize.js';
import { organizationAt, organizationSlots } from '../../assumptions/changes.js';
import { historyFor } from '../../assumptions/history.js';
import type { AssumptionKind } from '../../assumptions/kinds.js';
import { historyView } from '../../assumptions/view.js';
import { CATEGORIES } from '../../catalogue/categories.js';
import { AppError } from '../../errors.js';
import { createOrgApiKey, listApiKeys, revokeOrgApiKey, type KeyView } from '../../orgs/api-keys.js';
import {
  hasTrackedEvents,
  settingsView,
  updateSettings,
  type SettingsPatch,
} from '../../settings/settings.js';
import { dateTime } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField } from '../layout.js';
import { dashboardCtx, field, redirectWithNotice, sendPage, session, type Form } from '../page-kit.js';
import { historyTable, KIND_LABELS, pastChangeForm } from './assumptions.js';
import { select, textField } from './controls.js';
import { settingsFacts } from './settings-facts.js';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function num(
  form: Form,
  name: string,
  label: string,
  min: number,
  max: number,
  exclusiveMin = false,
): number | null {
  const text = field(form, name).trim();
  if (text === '') return null;
  const n = Number(text);
  if (!Number.isFinite(n) || (exclusiveMin ? n <= min : n < min) || n > max) {
    throw new AppError(
      'validation_error',
      `${label} must be a number ${exclusiveMin ? 'above' : 'from'} ${min} ${exclusiveMin ? 'and at most' : 'to'} ${max}.`,
    );
  }
  return n;
}

/** The form's fields as the settings verb's patch (what PATCH /v1/settings takes). */
function patchOf(form: Form, hasEvents: boolean): SettingsPatch {
  const patch: SettingsPatch = {};
  const name = field(form, 'name').trim();
  if (name === '' || name.length > 200)
    throw new AppError('validation_error', 'The name must be 1 to 200 characters.');
  patch.name = name;
  if (!hasEvents && form.has('currency')) patch.currency = field(form, 'currency').trim().toUpperCase();
  const rate = num(form, 'default_hourly_rate', 'The default hourly rate', 0, 1_000_000);
  if (rate === null) throw new AppError('validation_error', 'The default hourly rate is required.');
  patch.default_hourly_rate = rate;
  const rates: Record<string, number> = {};
  for (const c of CATEGORIES) {
    const r = num(form, `rate_${c}`, `The ${c} hourly rate`, 0, 1_000_000);
    if (r !== null) rates[c] = r;
  }
  patch.category_hourly_rates = rates;
  const credit = (o: string, label: string) => {
    const v = num(form, `credit_${o}`, `The credit for ${label}`, 0, 1);
    if (v === null) throw new AppError('validation_error', `The credit for ${label} is required.`);
    return v;
  };
  patch.outcome_credit = {
    success: credit('success', 'success'),
    needs_review: credit('needs_review', 'needs review'),
    failure: credit('failure', 'failure'),
  };
  patch.fallback_baseline_minutes = num(
    form,
    'fallback_baseline_minutes',
    'The fallback baseline',
    0,
    525600,
    true,
  );
  patch.usd_exchange_rate = num(form, 'usd_exchange_rate', 'The USD exchange rate', 0, 1e9, true);
  const emails = field(form, 'admin_emails')
    .split(/[\s,;]+/)
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const bad = emails.find((e) => !EMAIL.test(e) || e.length > 254);
  if (bad !== undefined) throw new AppError('validation_error', `"${bad}" is not an e-mail address.`);
  if (emails.length > 50) throw new AppError('validation_error', 'At most 50 admin e-mail addresses.');
  patch.admin_emails = emails;
  const from = field(form, 'effective_from').trim();
  if (from !== '') patch.effective_from = from;
  return patch;
}

function keysTable(keys: KeyView[], token: string, ownKey: string | null): SafeHtml {
  return html`<div class="table-wrap">
    <table>
      <thead>
        <tr>
          <th scope="col">Key id</th>
          <th scope="col">Name</th>
          <th scope="col">Scope</th>
          <th scope="col">Created</th>
          <th scope="col">Last used</th>
          <th scope="col">Revoked</th>
          <th scope="col" data-change><span class="sr-only">Actions</span></th>
        </tr>
      </thead>
      <tbody>
        ${keys.map(
          (k) =>
            html`<tr>
              <td>
                <code>${k.id}</code>${k.id === ownKey ? html` <span class="badge">this session</span>` : ''}
              </td>
              <td class="wrap">${k.name ?? html`<span class="muted">—</span>`}</td>
              <td><span class="badge scope-${k.scope}">${k.scope}</span></td>
              <td>${dateTime(k.created_at)}</td>
              <td>
                ${k.last_used_at === null ? html`<span class="muted">Never</span>` : dateTime(k.last_used_at)}
              </td>
              <td>${k.revoked_at === null ? html`<span class="muted">No</span>` : dateTime(k.revoked_at)}</td>
              <td data-change>
                ${
                  k.revoked_at === null
                    ? html`<form method="post" action="/dashboard/settings/keys/${k.id}/revoke">
                        ${csrfField(token)}
                        <button type="submit" class="button danger small" aria-label="Revoke key ${k.id}">
                          Revoke
                        </button>
                      </form>`
                    : ''
                }
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

async function settingsPage(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  createdKey: { id: string; scope: string; apiKey: string } | null,
) {
  const ctx = dashboardCtx(app, request);
  const history = await historyFor(ctx.db, ctx.org.id, ctx.org.assumptionsRevision);
  const now = ctx.clock.now().getTime();
  // The values in force now (a change scheduled earlier may have come into force since).
  const s = settingsView(organizationAt(ctx.org, history, now));
  const versions = historyView(history, organizationSlots(), now);
  const choices = organizationSlots().map(
    ([kind, key]) =>
      [kind, key, `${KIND_LABELS[kind]}${key === '' ? '' : ` (${key})`}`] as [AssumptionKind, string, string],
  );
  const token = session(request).csrfToken;
  const hasEvents = await hasTrackedEvents(ctx.db, ctx.org.id);
  const keys = await listApiKeys({ ctx, orgId: ctx.org.id });
  const rates = s.category_hourly_rates as Record<string, number | undefined>;
  const body = html`${
      createdKey
        ? html`<section class="panel secret" aria-labelledby="key-title">
            <h2 id="key-title">New ${createdKey.scope} key ${createdKey.id}</h2>
            <p>Copy it now: <strong>it is shown only this once.</strong></p>
            <div class="copyline">
              <code id="new-key">${createdKey.apiKey}</code>
              <button type="button" class="button quiet" data-copy="new-key">Copy key</button>
            </div>
          </section>`
        : ''
    }
    <section class="panel">
      <h2>Organisation</h2>
      ${hasRole(ctx, 'admin') ? '' : settingsFacts(s)}
      <form method="post" action="/dashboard/settings" class="form-grid">
        ${csrfField(token)}
        ${textField({ id: 'name', name: 'name', label: 'Name', value: s.name, required: true })}
        ${
          hasEvents
            ? html`<div class="field">
                <label for="currency">Currency</label>
                <input id="currency" value="${s.currency}" readonly aria-describedby="currency-hint" />
                <small id="currency-hint" class="muted"
                  >Fixed once events exist, so sums never mix currencies.</small
                >
              </div>`
            : textField({
                id: 'currency',
                name: 'currency',
                label: 'Currency',
                value: s.currency,
                hint: 'ISO code, e.g. EUR; changeable until the first event',
                attrs: html`pattern="[A-Za-z]{3}"`,
              })
        }
        ${textField({ id: 'default_hourly_rate', name: 'default_hourly_rate', label: `Default hourly rate (${s.currency})`, type: 'number', value: String(s.default_hourly_rate), required: true, attrs: html`min="0" step="any"` })}
        ${textField({ id: 'fallback_baseline_minutes', name: 'fallback_baseline_minutes', label: 'Fallback baseline (minutes)', type: 'number', value: s.fallback_baseline_minutes === null ? '' : String(s.fallback_baseline_minutes), hint: 'For unknown task types; empty = off (they are refused)', attrs: html`min="0" step="any"` })}
        ${textField({ id: 'usd_exchange_rate', name: 'usd_exchange_rate', label: `USD to ${s.currency} rate`, type: 'number', value: s.usd_exchange_rate === null ? '' : String(s.usd_exchange_rate), hint: 'Empty = the shipped reference rates', attrs: html`min="0" step="any"` })}
        <fieldset class="field wide">
          <legend>Hourly rate per category (${s.currency}; empty = default rate)</legend>
          <div class="subgrid">
            ${CATEGORIES.map((c) =>
              textField({
                id: `rate_${c}`,
                name: `rate_${c}`,
                label: c,
                type: 'number',
                value: rates[c] === undefined ? '' : String(rates[c]),
                attrs: html`min="0" step="any"`,
              }),
            )}
          </div>
        </fieldset>
        <fieldset class="field wide">
          <legend>Outcome credit (share of the baseline counted, 0 to 1)</legend>
          <div class="subgrid">
            ${textField({ id: 'credit_success', name: 'credit_success', label: 'Success', type: 'number', value: String(s.outcome_credit.success), attrs: html`min="0" max="1" step="any"` })}
            ${textField({ id: 'credit_needs_review', name: 'credit_needs_review', label: 'Needs review', type: 'number', value: String(s.outcome_credit.needs_review), attrs: html`min="0" max="1" step="any"` })}
            ${textField({ id: 'credit_failure', name: 'credit_failure', label: 'Failure', type: 'number', value: String(s.outcome_credit.failure), attrs: html`min="0" max="1" step="any"` })}
          </div>
        </fieldset>
        <div class="field wide">
          <label for="admin_emails">Admin e-mails</label>
          <textarea id="admin_emails" name="admin_emails" rows="3" aria-describedby="admin_emails-hint">
${s.admin_emails.join('\n')}</textarea>
          <small id="admin_emails-hint" class="muted"
            >One per line; they hear when a webhook is deactivated.</small
          >
        </div>
        ${textField({ id: 'effective_from', name: 'effective_from', label: 'Rates, credits and fallback apply from (UTC day)', type: 'date', hint: 'Empty = now. A later day schedules the change; for a past day use "Change from a past date" below.' })}
        <p class="muted wide">
          Events are priced with the values in force at their occurred_at; stored events keep the values they
          were computed with.
        </p>
        <div class="field actions"><button type="submit" class="button">Save settings</button></div>
      </form>
    </section>
    <section class="panel">
      <h2>Assumption history</h2>
      <p class="muted">
        Every value of the rates, credits and fallback baseline, with the date it applies from.
      </p>
      ${historyTable(versions, s.currency, 'Assumption history')}
      ${pastChangeForm({
        id: 'restate',
        intro:
          'A change from a past date restates figures already reported. Preview it first: the events it moves and each month before and after.',
        choices,
        back: '/dashboard/settings',
        valueHint: 'Rates in the currency, credits 0 to 1, minutes; empty = unset',
      })}
    </section>
    <section class="panel">
      <h2>API keys</h2>
      <p class="muted">
        Admin keys can do everything and sign in here; ingest keys can only track events and list task types.
        <span data-change>Give agents ingest keys.</span>
      </p>
      ${keysTable(keys, token, session(request).keyId)}
      <form
        method="post"
        action="/dashboard/settings/keys"
        class="titled-form"
        aria-labelledby="create-key-title"
      >
        <h3 id="create-key-title">Create a key</h3>
        <div class="form-grid">
          ${csrfField(token)} ${textField({ id: 'key_name', name: 'name', label: 'Key name' })}
          ${select({
            id: 'key_scope',
            name: 'scope',
            label: 'Scope',
            options: [
              ['ingest', 'ingest (tracking only)'],
              ['admin', 'admin (everything)'],
            ],
            value: 'ingest',
          })}
          <div class="field actions"><button type="submit" class="button">Create key</button></div>
        </div>
      </form>
    </section>
    <section class="panel" data-change>
      <h2>Single sign-on</h2>
      <p>
        <a href="/dashboard/settings/sso">Single sign-on with your identity provider</a> (OpenID Connect,
        Enterprise plan).
      </p>
    </section>`;
  return sendPage(request, reply, {
    title: 'Settings',
    section: 'Settings',
    body,
    status: createdKey ? 201 : 200,
  });
}

export function registerSettingsPages(dash: FastifyInstance, app: FastifyInstance): void {
  dash.get('/settings', async (request, reply) => settingsPage(app, request, reply, null));

  dash.post<{ Body: Form }>('/settings', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    try {
      const hasEvents = await hasTrackedEvents(ctx.db, ctx.org.id);
      await updateSettings({ ctx, orgId: ctx.org.id, patch: patchOf(request.body, hasEvents) });
      return redirectWithNotice(app, request, reply, '/dashboard/settings', 'Settings saved.');
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500) throw error;
      const d = error.details?.[0];
      const message = d ? `${d.path.replace('/body/', '')} ${d.message}` : error.message;
      return redirectWithNotice(app, request, reply, '/dashboard/settings', `Not saved: ${message}`);
    }
  });

  // Answers with the page itself: the new key exists only in this response.
  dash.post<{ Body: Form }>('/settings/keys', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const name = field(request.body, 'name').trim().slice(0, 200);
    const scope = field(request.body, 'scope') === 'admin' ? 'admin' : 'ingest';
    const created = await createOrgApiKey({ ctx, input: { ...(name === '' ? {} : { name }), scope } });
    return settingsPage(app, request, reply, {
      id: created.key.id,
      scope: created.key.scope,
      apiKey: created.api_key,
    });
  });

  dash.post<{ Params: { id: string } }>('/settings/keys/:id/revoke', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const key = await revokeOrgApiKey({ ctx, input: { keyId: request.params.id.slice(0, 20) } });
    return redirectWithNotice(app, request, reply, '/dashboard/settings', `Key ${key.id} revoked.`);
  });
}
