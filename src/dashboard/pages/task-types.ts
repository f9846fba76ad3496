import type { FastifyInstance } from 'fastify';
import { hasRole } from '../../accounts/authorize.js';
import { listAuditLog } from '../../audit/audit-log.js';
import { planAtLeast } from '../../billing/plans.js';
import { CATEGORIES } from '../../catalogue/categories.js';
import { removeOverride, setOverride } from '../../catalogue/overrides.js';
import { archiveTaskType, createCustomTaskType, listTaskTypes } from '../../catalogue/task-types.js';
import type { TaskTypeRecord } from '../../catalogue/view.js';
import { AppError, notFound } from '../../errors.js';
import { dateTime, decimal, money } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField, planGate } from '../layout.js';
import { dashboardCtx, field, redirectWithNotice, sendPage, session, type Form } from '../page-kit.js';
import { breakableKey } from '../task-names.js';
import { historyTable, pastChangeForm } from './assumptions.js';
import { select, textField } from './controls.js';

function badges(t: TaskTypeRecord): SafeHtml {
  return html`<span class="badge ${t.kind}">${t.kind === 'builtin' ? 'Built-in' : 'Custom'}</span>
    ${t.override ? html`<span class="badge overridden">Overridden</span>` : ''}
    ${t.status === 'archived' ? html`<span class="badge archived">Archived</span>` : ''}`;
}

function numberOf(form: Form, name: string, path: string): number {
  const text = field(form, name).trim();
  const n = Number(text);
  if (text === '' || !Number.isFinite(n)) throw new AppError('validation_error', `${path} must be a number.`);
  if (name !== 'hourly_rate' && (n <= 0 || n > 525600))
    throw new AppError('validation_error', `${path} must be more than 0 and at most 525,600.`);
  if (n < 0 || n > 1_000_000) throw new AppError('validation_error', `${path} must be from 0 to 1,000,000.`);
  return n;
}

/** A verb's refusal becomes a notice on the page the form came from, never an error page. */
async function attempt(
  app: FastifyInstance,
  request: Parameters<typeof session>[0],
  reply: Parameters<typeof redirectWithNotice>[2],
  back: string,
  run: () => Promise<string>,
) {
  try {
    const notice = await run();
    return redirectWithNotice(app, request, reply, back, notice);
  } catch (error) {
    if (error instanceof AppError && error.status < 500) {
      const detail = error.details?.[0];
      const message = detail ? `${detail.path.replace('/body/', '')} ${detail.message}` : error.message;
      return redirectWithNotice(app, request, reply, back, `Not saved: ${message}`);
    }
    throw error;
  }
}

export function registerTaskTypePages(dash: FastifyInstance, app: FastifyInstance): void {
  dash.get('/task-types', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const pro = planAtLeast(ctx.org.plan, 'pro');
    const types = await listTaskTypes({ ctx, input: { includeArchived: true } });
    const audit = pro ? await listAuditLog({ ctx, limit: 50 }) : null;
    const token = session(request).csrfToken;
    // The type's page holds its changes for those who may make them; the others read it.
    const open = hasRole(ctx, 'admin') ? 'Manage' : 'View';
    const sections = CATEGORIES.map((category) => {
      const rows = types.filter((t) => t.category === category);
      if (rows.length === 0) return '';
      return html`<section class="panel">
        <h2 id="cat-${category}">${category[0]?.toUpperCase()}${category.slice(1)}</h2>
        <div class="table-wrap">
          <table class="catalogue" aria-labelledby="cat-${category}">
            <thead>
              <tr>
                <th scope="col">Task type</th>
                <th scope="col">Kind</th>
                <th scope="col" class="num">Baseline (min)</th>
                <th scope="col" class="num">Default (min)</th>
                <th scope="col"><span class="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              ${rows.map(
                (t) =>
                  html`<tr>
                    <td class="wrap">
                      <strong>${t.display_name}</strong><br /><code>${breakableKey(t.key)}</code>
                      <span class="phone-badges">${badges(t)}</span>
                    </td>
                    <td>${badges(t)}</td>
                    <td class="num">${decimal(t.effective_baseline_minutes)}</td>
                    <td class="num">${decimal(t.default_baseline_minutes)}</td>
                    <td>
                      <a href="/dashboard/task-types/${t.key}" aria-label="${open} ${t.display_name}"
                        >${open}</a
                      >
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>
        </div>
      </section>`;
    });
    const create = pro
      ? html`<section class="panel" data-change>
          <h2>Create a custom task type</h2>
          <form method="post" action="/dashboard/task-types" class="form-grid">
            ${csrfField(token)}
            ${textField({ id: 'key', name: 'key', label: 'Key', required: true, hint: 'Lowercase letters, digits and _; starts with a letter', attrs: html`pattern="[a-z][a-z0-9_]{0,63}"` })}
            ${textField({ id: 'display_name', name: 'display_name', label: 'Display name', required: true })}
            ${select({ id: 'category', name: 'category', label: 'Category', options: CATEGORIES.map((c) => [c, c] as const), value: 'ops' })}
            ${textField({ id: 'default_baseline_minutes', name: 'default_baseline_minutes', label: 'Baseline minutes', type: 'number', required: true, attrs: html`min="0.01" step="any"` })}
            ${textField({ id: 'hourly_rate', name: 'hourly_rate', label: 'Hourly rate (optional)', type: 'number', attrs: html`min="0" step="any"`, hint: `In ${ctx.org.currency}; empty uses the category or default rate` })}
            ${textField({ id: 'baseline_source', name: 'baseline_source', label: 'Where the baseline comes from (optional)' })}
            <div class="field actions"><button type="submit" class="button">Create task type</button></div>
          </form>
        </section>`
      : planGate('Custom task types and overrides', 'Pro', ctx.org, true);
    const auditSection = audit
      ? html`<section class="panel">
          <h2>Audit log</h2>
          ${
            audit.data.length === 0
              ? html`<p class="muted">No changes yet.</p>`
              : html`<div class="table-wrap">
                  <table>
                    <thead>
                      <tr>
                        <th scope="col">When</th>
                        <th scope="col">Action</th>
                        <th scope="col">Target</th>
                        <th scope="col">Key</th>
                        <th scope="col">Reason</th>
                      </tr>
                    </thead>
                    <tbody>
                      ${audit.data.map(
                        (a) =>
                          html`<tr>
                            <td>${dateTime(a.at)}</td>
                            <td>${a.action}</td>
                            <td class="wrap"><code>${a.target}</code></td>
                            <td>${a.actor_key_id ?? 'CLI'}</td>
                            <td class="wrap">${a.reason ?? ''}</td>
                          </tr>`,
                      )}
                    </tbody>
                  </table>
                </div>`
          }
        </section>`
      : planGate('The audit log', 'Pro', ctx.org);
    const body = html`${create} ${sections} ${auditSection}`;
    return sendPage(request, reply, { title: 'Task types', section: 'Task types', body });
  });

  dash.post<{ Body: Form }>('/task-types', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const form = request.body;
    return attempt(app, request, reply, '/dashboard/task-types', async () => {
      if (!planAtLeast(ctx.org.plan, 'pro'))
        throw new AppError('plan_upgrade_required', 'Custom task types need the Pro plan.');
      const rate = field(form, 'hourly_rate').trim();
      const source = field(form, 'baseline_source').trim();
      const category = field(form, 'category');
      if (!(CATEGORIES as readonly string[]).includes(category))
        throw new AppError('validation_error', 'Choose a category.');
      const key = field(form, 'key').trim();
      if (!/^[a-z][a-z0-9_]{0,63}$/.test(key))
        throw new AppError(
          'validation_error',
          'The key must be lowercase letters, digits and _, starting with a letter.',
        );
      const displayName = field(form, 'display_name').trim();
      if (displayName === '' || displayName.length > 200)
        throw new AppError('validation_error', 'The display name must be 1 to 200 characters.');
      const record = await createCustomTaskType({
        ctx,
        input: {
          key,
          display_name: displayName,
          category: category as (typeof CATEGORIES)[number],
          default_baseline_minutes: numberOf(form, 'default_baseline_minutes', 'Baseline minutes'),
          ...(source === '' ? {} : { baseline_source: source.slice(0, 500) }),
          ...(rate === '' ? {} : { hourly_rate: numberOf(form, 'hourly_rate', 'Hourly rate') }),
        },
      });
      return `Created the custom task type ${record.key}.`;
    });
  });

  const find = async (ctx: ReturnType<typeof dashboardCtx>, key: string) => {
    const types = await listTaskTypes({ ctx, input: { includeArchived: true } });
    const t = types.find((x) => x.key === key);
    if (!t) throw notFound(`Task type ${key}`);
    return t;
  };

  dash.get<{ Params: { key: string } }>('/task-types/:key', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const t = await find(ctx, request.params.key);
    const pro = planAtLeast(ctx.org.plan, 'pro');
    const token = session(request).csrfToken;
    const back = `/dashboard/task-types/${t.key}`;
    let actions: SafeHtml;
    if (!pro) actions = planGate('Changing task types', 'Pro', ctx.org, true);
    else if (t.kind === 'builtin') {
      actions = html`<section class="panel" data-change>
        <h2>Override the baseline</h2>
        <p>
          Tally's default is
          <strong>${decimal(t.default_baseline_minutes)} minutes</strong> (${t.baseline_source ?? ''}). Set
          your own measured figure; it applies to events that occur from now on (or from a later day you
          choose).
        </p>
        <form method="post" action="${back}/override" class="form-grid">
          ${csrfField(token)}
          ${textField({ id: 'minutes', name: 'baseline_minutes_override', label: 'Baseline minutes', type: 'number', required: true, value: t.override ? String(t.override.baseline_minutes_override) : '', attrs: html`min="0.01" step="any"`, hint: `Original: ${decimal(t.default_baseline_minutes)} minutes` })}
          ${textField({ id: 'reason', name: 'reason', label: 'Reason', value: t.override?.reason ?? '' })}
          ${textField({ id: 'override_from', name: 'effective_from', label: 'Applies from (UTC day)', type: 'date', hint: 'Empty = now; for a past day use "Change from a past date"' })}
          <div class="field actions"><button type="submit" class="button">Save override</button></div>
        </form>
        ${
          t.override
            ? html`<form method="post" action="${back}/override/remove">
                ${csrfField(token)}
                <button type="submit" class="button danger">Remove override</button>
              </form>`
            : ''
        }
      </section>`;
    } else if (t.status === 'active') {
      actions = html`<section class="panel" data-change>
        <h2>Archive</h2>
        <p>An archived custom type no longer resolves for new events; its past events keep their figures.</p>
        <form method="post" action="${back}/archive">
          ${csrfField(token)}
          <button type="submit" class="button danger">Archive task type</button>
        </form>
      </section>`;
    } else actions = html`<p class="muted">This custom task type is archived.</p>`;
    const body = html`<p><a href="/dashboard/task-types">← All task types</a></p>
      <section class="panel">
        <h2>Details</h2>
        <p>${badges(t)}</p>
        <div class="table-wrap">
          <table class="fields">
            <tbody>
              <tr>
                <th scope="row">Key</th>
                <td><code>${breakableKey(t.key)}</code></td>
              </tr>
              <tr>
                <th scope="row">Category</th>
                <td>${t.category}</td>
              </tr>
              <tr>
                <th scope="row">Baseline in use</th>
                <td>${decimal(t.effective_baseline_minutes)} minutes</td>
              </tr>
              <tr>
                <th scope="row">Default baseline</th>
                <td>${decimal(t.default_baseline_minutes)} minutes</td>
              </tr>
              <tr>
                <th scope="row">Baseline source</th>
                <td>${t.baseline_source ?? '—'}</td>
              </tr>
              ${
                t.override
                  ? html`<tr>
                      <th scope="row">Override</th>
                      <td>
                        ${decimal(t.override.baseline_minutes_override)} minutes (original
                        ${decimal(t.override.original_baseline_minutes)}), set
                        ${dateTime(t.override.updated_at)}.
                        ${t.override.reason ? html`Reason: ${t.override.reason}` : 'No reason given.'}
                      </td>
                    </tr>`
                  : ''
              }
              ${
                t.kind === 'custom'
                  ? html`<tr>
                      <th scope="row">Hourly rate</th>
                      <td>
                        ${t.hourly_rate === null ? 'Category or default rate' : money(t.hourly_rate, ctx.org.currency)}
                      </td>
                    </tr>`
                  : ''
              }
            </tbody>
          </table>
        </div>
      </section>
      <section class="panel">
        <h2>History</h2>
        <p class="muted">
          Every value of this type's
          ${t.kind === 'custom' ? 'baseline and hourly rate' : 'baseline override'}, with the date it applies
          from.
        </p>
        ${historyTable(t.assumption_history, ctx.org.currency, `History of ${t.key}`)}
        ${
          pro
            ? pastChangeForm({
                id: 'restate',
                intro:
                  'A change from a past date restates figures already reported: preview the events it moves and each month before and after, then apply it with a reason.',
                back,
                valueHint:
                  t.kind === 'custom'
                    ? 'Minutes, or the rate in the currency'
                    : 'Minutes; empty = back to the built-in default',
                choices:
                  t.kind === 'custom'
                    ? [
                        ['custom_baseline', t.key, 'Baseline (minutes)'],
                        ['custom_hourly_rate', t.key, 'Hourly rate'],
                      ]
                    : [['baseline_override', t.key, 'Baseline override (minutes)']],
              })
            : ''
        }
      </section>
      ${actions}`;
    return sendPage(request, reply, { title: t.display_name, section: 'Task types', body });
  });

  dash.post<{ Params: { key: string }; Body: Form }>('/task-types/:key/override', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const key = request.params.key;
    return attempt(app, request, reply, `/dashboard/task-types/${encodeURIComponent(key)}`, async () => {
      const reason = field(request.body, 'reason').trim().slice(0, 1000);
      const from = field(request.body, 'effective_from').trim();
      await setOverride({
        ctx,
        key,
        input: {
          baseline_minutes_override: numberOf(request.body, 'baseline_minutes_override', 'Baseline minutes'),
          ...(reason === '' ? {} : { reason }),
          ...(from === '' ? {} : { effective_from: from }),
        },
      });
      return from === ''
        ? 'Override saved. It applies to events that occur from now on.'
        : `Override saved. It applies to events that occur from ${from} on.`;
    });
  });

  dash.post<{ Params: { key: string } }>('/task-types/:key/override/remove', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const key = request.params.key;
    return attempt(app, request, reply, `/dashboard/task-types/${encodeURIComponent(key)}`, async () => {
      await removeOverride({ ctx, key });
      return "Override removed; Tally's default baseline applies again.";
    });
  });

  dash.post<{ Params: { key: string } }>('/task-types/:key/archive', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const key = request.params.key;
    return attempt(app, request, reply, `/dashboard/task-types/${encodeURIComponent(key)}`, async () => {
      await archiveTaskType({ ctx, key });
      return `Archived ${key}.`;
    });
  });
}
