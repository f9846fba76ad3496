import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { listTaskTypes } from '../../catalogue/task-types.js';
import { AppError } from '../../errors.js';
import { countHeldSpans, readCounters } from '../../otlp/held.js';
import {
  createMappingRule,
  deleteMappingRule,
  listMappingRules,
  type MappingRuleInput,
} from '../../otlp/mappings.js';
import { RULE_FIELDS, type MappingRule, type RuleField } from '../../otlp/rules.js';
import { COUNTERS } from '../../otlp/sweeper.js';
import {
  dismissUnresolvedRun,
  listUnresolvedRuns,
  retryUnresolvedRuns,
  type UnresolvedRun,
} from '../../otlp/unresolved.js';
import { count, dateTime } from '../format.js';
import { html, type SafeHtml } from '../html.js';
import { csrfField } from '../layout.js';
import {
  dashboardCtx,
  field,
  queryOf,
  redirectWithNotice,
  sendPage,
  session,
  type Form,
} from '../page-kit.js';
import { select, textField } from './controls.js';

const PAGE = '/dashboard/opentelemetry';

const FIELD_LABELS: Record<RuleField, string> = {
  agent_name: 'Agent name (gen_ai.agent.name)',
  workflow_name: 'Workflow name (gen_ai.workflow.name)',
  span_name: 'Span name',
  resource_attribute: 'Resource attribute',
};

function ruleMatch(rule: MappingRule): SafeHtml {
  if (rule.kind === 'client_id') return html`Resource attribute <code>${rule.attribute}</code>`;
  const what =
    rule.field === 'resource_attribute' ? html`<code>${rule.attribute}</code>` : FIELD_LABELS[rule.field];
  return html`${what} = <code>${rule.value}</code>`;
}

/** A verb's refusal becomes a notice on this page, never an error page. */
async function attempt(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  run: () => Promise<string>,
) {
  try {
    return redirectWithNotice(app, request, reply, PAGE, await run());
  } catch (error) {
    if (error instanceof AppError && error.status < 500) {
      const detail = error.details?.[0];
      const message = detail ? `${detail.path.replace('/body/', '')} ${detail.message}` : error.message;
      return redirectWithNotice(app, request, reply, PAGE, `Not saved: ${message}`);
    }
    throw error;
  }
}

/** The prefilled rule form of an unresolved run: its agent name, else its span name. */
function ruleLinkFor(run: UnresolvedRun): string {
  const q = new URLSearchParams(
    run.agent_name !== null
      ? { field: 'agent_name', value: run.agent_name }
      : run.workflow_name !== null
        ? { field: 'workflow_name', value: run.workflow_name }
        : { field: 'span_name', value: run.span_name },
  );
  return `${PAGE}?${q.toString()}#add-rule`;
}

function unresolvedSection(runs: UnresolvedRun[], next: string | null, token: string): SafeHtml {
  if (runs.length === 0) {
    return html`<section class="panel" aria-labelledby="unresolved">
      <h2 id="unresolved">Runs without a task type</h2>
      <p class="muted">None: every run received has a task type.</p>
    </section>`;
  }
  return html`<section class="panel" aria-labelledby="unresolved">
    <h2 id="unresolved">Runs without a task type</h2>
    <p>
      These agent runs arrived without a <code>tally.task_type</code> attribute that Tally knows and without a
      mapping rule that matches. They are kept<span data-change
        >: add a rule, and the runs it matches are tracked with their own time, tokens and cost</span
      >.
    </p>
    <form method="post" action="${PAGE}/unresolved/retry">
      ${csrfField(token)}
      <button type="submit" class="button quiet">Try them all again</button>
    </form>
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Ended</th>
            <th scope="col">Agent</th>
            <th scope="col">Service</th>
            <th scope="col">Span</th>
            <th scope="col">Why</th>
            <th scope="col" data-change><span class="sr-only">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          ${runs.map(
            (run) =>
              html`<tr>
                <td>${dateTime(run.occurred_at)}</td>
                <td class="wrap">${run.agent_id}</td>
                <td class="wrap">${run.service_name ?? ''}</td>
                <td class="wrap"><code>${run.span_name}</code></td>
                <td class="wrap">
                  ${run.task_type === null ? 'No task type' : html`Unknown task type <code>${run.task_type}</code>`}
                </td>
                <td data-change>
                  <a href="${ruleLinkFor(run)}" aria-label="Add a rule for ${run.agent_id}">Add a rule</a>
                  <form method="post" action="${PAGE}/unresolved/${run.id}/dismiss">
                    ${csrfField(token)}
                    <button
                      type="submit"
                      class="button quiet"
                      aria-label="Dismiss the run of ${run.agent_id}"
                    >
                      Dismiss
                    </button>
                  </form>
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
    ${next === null ? '' : html`<p><a href="${PAGE}?cursor=${next}#unresolved">Older runs</a></p>`}
  </section>`;
}

function rulesSection(rules: MappingRule[], token: string): SafeHtml {
  return html`<section class="panel" aria-labelledby="rules">
    <h2 id="rules">Mapping rules</h2>
    ${
      rules.length === 0
        ? html`<p class="muted">No rules yet.</p>`
        : html`<p class="muted">
              Tried in this order: agent name, workflow name, span name, resource attribute; the oldest first
              within each. A span's own <code>tally.task_type</code> comes before every rule.
            </p>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">When a run's</th>
                    <th scope="col">It gets</th>
                    <th scope="col">Added</th>
                    <th scope="col" data-change><span class="sr-only">Actions</span></th>
                  </tr>
                </thead>
                <tbody>
                  ${rules.map(
                    (rule) =>
                      html`<tr>
                        <td class="wrap">${ruleMatch(rule)}</td>
                        <td class="wrap">
                          ${rule.kind === 'client_id' ? html`its value as the client` : html`task type <code>${rule.task_type}</code>`}
                        </td>
                        <td>${dateTime(rule.created_at)}</td>
                        <td data-change>
                          <form method="post" action="${PAGE}/mappings/${rule.id}/delete">
                            ${csrfField(token)}
                            <button
                              type="submit"
                              class="button danger"
                              aria-label="Delete the rule ${rule.kind === 'client_id' ? rule.attribute : rule.value}"
                            >
                              Delete
                            </button>
                          </form>
                        </td>
                      </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
    }
  </section>`;
}

export function registerOpenTelemetryPage(dash: FastifyInstance, app: FastifyInstance): void {
  dash.get('/opentelemetry', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const query = queryOf(request);
    const cursor = query.get('cursor');
    const [rules, runs, types, counters, held] = await Promise.all([
      listMappingRules({ ctx }),
      listUnresolvedRuns({
        ctx,
        limit: 50,
        ...(cursor && /^run_[0-9A-Z]{26}$/.test(cursor) ? { cursor } : {}),
      }),
      listTaskTypes({ ctx, input: {} }),
      readCounters(ctx.db, ctx.org.id),
      countHeldSpans(ctx.db, ctx.org.id),
    ]);
    const token = session(request).csrfToken;
    const prefillField = (RULE_FIELDS as readonly string[]).includes(query.get('field') ?? '')
      ? (query.get('field') as RuleField)
      : 'agent_name';
    const origin = `${request.protocol}://${request.host}`;
    const body = html`<section class="panel" aria-labelledby="setup">
        <h2 id="setup">Send traces</h2>
        <p>
          Point any OpenTelemetry exporter (OTLP over HTTP, protobuf or JSON) at Tally with an ingest key.
          Every agent run (an <code>invoke_agent</code> or <code>invoke_workflow</code> span) becomes a
          tracked event, with its duration, tokens and cost.
        </p>
        <pre id="otel-env" class="code">
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=${origin}/v1/traces
OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf
OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20tally_live_…</pre>
        <button type="button" class="button quiet" data-copy="otel-env">Copy</button>
        <div class="table-wrap">
          <table class="fields">
            <tbody>
              <tr>
                <th scope="row">Spans held</th>
                <td>${count(held)}</td>
              </tr>
              <tr>
                <th scope="row">Traces dropped</th>
                <td>${count(counters.get(COUNTERS.droppedTraces) ?? 0)}</td>
              </tr>
              <tr>
                <th scope="row">Late spans</th>
                <td>${count(counters.get(COUNTERS.lateSpans) ?? 0)}</td>
              </tr>
            </tbody>
          </table>
        </div>
        <p class="muted">
          Spans held wait for the rest of their trace, ${count(ctx.config.otlpHoldSeconds)} seconds at most; a
          trace whose agent span never came is then dropped; a span that came after its run was tracked is
          late. See docs/opentelemetry.md.
        </p>
      </section>
      ${unresolvedSection(runs.data, runs.next_cursor, token)}
      <section class="panel" aria-labelledby="add-rule" data-change>
        <h2 id="add-rule">Add a mapping rule</h2>
        <form method="post" action="${PAGE}/mappings" class="form-grid">
          ${csrfField(token)}
          <input type="hidden" name="kind" value="task_type" />
          ${select({ id: 'field', name: 'field', label: 'Match on', options: RULE_FIELDS.map((f) => [f, FIELD_LABELS[f]] as const), value: prefillField })}
          ${textField({ id: 'attribute', name: 'attribute', label: 'Resource attribute (only to match on one)', value: query.get('attribute') ?? '', hint: 'e.g. service.name or deployment.environment.name' })}
          ${textField({ id: 'value', name: 'value', label: 'Value', required: true, value: query.get('value') ?? '' })}
          ${select({
            id: 'task_type',
            name: 'task_type',
            label: 'Task type',
            options: [
              ['', 'Choose a task type…'] as const,
              ...types.map((t) => [t.key, `${t.display_name} (${t.key})`] as const),
            ],
            value: query.get('task_type') ?? '',
          })}
          <div class="field actions"><button type="submit" class="button">Add rule</button></div>
        </form>
        <h3>Clients</h3>
        <form method="post" action="${PAGE}/mappings" class="form-grid">
          ${csrfField(token)}
          <input type="hidden" name="kind" value="client_id" />
          ${textField({ id: 'client_attribute', name: 'attribute', label: 'Resource attribute that names the client', required: true, hint: "e.g. tenant.id; a span's own tally.client_id comes first" })}
          <div class="field actions"><button type="submit" class="button">Add client rule</button></div>
        </form>
      </section>
      ${rulesSection(rules, token)}`;
    return sendPage(request, reply, { title: 'OpenTelemetry', section: 'OpenTelemetry', body });
  });

  dash.post<{ Body: Form }>('/opentelemetry/mappings', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const form = request.body;
    return attempt(app, request, reply, async () => {
      const kind = field(form, 'kind') === 'client_id' ? 'client_id' : 'task_type';
      const text = (name: string, max: number) => {
        const value = field(form, name).trim();
        if (value.length > max)
          throw new AppError('validation_error', `${name} must be at most ${max} characters.`);
        return value === '' ? undefined : value;
      };
      const chosen = field(form, 'field');
      const input: MappingRuleInput =
        kind === 'client_id'
          ? { kind, ...(text('attribute', 255) === undefined ? {} : { attribute: text('attribute', 255) }) }
          : {
              kind,
              ...((RULE_FIELDS as readonly string[]).includes(chosen) ? { field: chosen as RuleField } : {}),
              ...(chosen === 'resource_attribute' && text('attribute', 255) !== undefined
                ? { attribute: text('attribute', 255) }
                : {}),
              ...(text('value', 256) === undefined ? {} : { value: text('value', 256) }),
              ...(text('task_type', 200) === undefined ? {} : { task_type: text('task_type', 200) }),
            };
      const { resolvedRuns } = await createMappingRule({ ctx, input });
      return resolvedRuns === 0
        ? 'Rule added.'
        : `Rule added; ${count(resolvedRuns)} ${resolvedRuns === 1 ? 'run' : 'runs'} without a task type tracked now.`;
    });
  });

  dash.post<{ Params: { id: string } }>('/opentelemetry/mappings/:id/delete', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    return attempt(app, request, reply, async () => {
      await deleteMappingRule({ ctx, id: request.params.id });
      return 'Rule deleted. Runs tracked with it keep their task type.';
    });
  });

  dash.post<{ Params: { id: string } }>('/opentelemetry/unresolved/:id/dismiss', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    return attempt(app, request, reply, async () => {
      await dismissUnresolvedRun({ ctx, id: request.params.id });
      return 'Run dismissed.';
    });
  });

  dash.post('/opentelemetry/unresolved/retry', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    return attempt(app, request, reply, async () => {
      const n = await retryUnresolvedRuns({ ctx });
      return n === 0 ? 'No run could be resolved yet.' : `${count(n)} ${n === 1 ? 'run' : 'runs'} tracked.`;
    });
  });
}
