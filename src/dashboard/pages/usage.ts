import type { FastifyInstance } from 'fastify';
import { getUsage } from '../../billing/usage.js';
import { count, money, monthName } from '../format.js';
import { html } from '../html.js';
import { planName } from '../layout.js';
import { dashboardCtx, sendPage } from '../page-kit.js';

export function registerUsagePage(dash: FastifyInstance, app: FastifyInstance): void {
  dash.get('/usage', async (request, reply) => {
    const ctx = dashboardCtx(app, request);
    const usage = await getUsage({ ctx });
    const now = ctx.clock.now();
    const monthEnd = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
    const daysLeft = Math.ceil((monthEnd - now.getTime()) / 86_400_000);
    const included = usage.events_included_in_plan;
    const pct = included > 0 ? Math.min(100, (usage.events_this_month / included) * 100) : 0;
    const plan = ctx.config.plans[ctx.org.plan];
    const body = html`<section class="panel">
        <h2>${planName(usage.plan)} plan, ${monthName(usage.month)}</h2>
        <label for="usage-meter">Events this month against the included events</label>
        <meter
          id="usage-meter"
          min="0"
          max="${included}"
          low="${Math.round(included * 0.8)}"
          high="${included}"
          optimum="0"
          value="${Math.min(usage.events_this_month, included)}"
        >
          ${pct.toFixed(0)}%
        </meter>
        <p class="meter-text">
          <strong>${count(usage.events_this_month)}</strong> of ${count(included)} included events
          (${pct.toFixed(1)}%)${plan.hard_cap ? html`. Tracking stops at the included events on this plan.` : ''}
        </p>
      </section>
      <dl class="cards">
        <div class="card">
          <dt>Events this month</dt>
          <dd class="figure">${count(usage.events_this_month)}</dd>
        </div>
        <div class="card">
          <dt>Included in the plan</dt>
          <dd class="figure">${count(included)}</dd>
        </div>
        <div class="card">
          <dt>Overage events</dt>
          <dd class="figure">${count(usage.overage_events)}</dd>
        </div>
        <div class="card">
          <dt>Projected overage</dt>
          <dd class="${usage.projected_overage_eur === null ? 'figure words' : 'figure'}">
            ${usage.projected_overage_eur === null ? 'No overage forecast' : money(usage.projected_overage_eur, 'EUR')}
          </dd>
          <dd class="delta muted">Billed in EUR; this month's pace projected to its end</dd>
        </div>
        <div class="card">
          <dt>Lifetime events</dt>
          <dd class="figure">${count(usage.lifetime_events)}</dd>
        </div>
        <div class="card">
          <dt>Days left in the month</dt>
          <dd class="figure">${count(daysLeft)}</dd>
        </div>
      </dl>
      <p class="muted">
        Events count in the month they are received (UTC), as <code>GET /v1/reports/usage</code> reports them.
      </p>`;
    return sendPage(request, reply, { title: 'Usage', section: 'Usage', body });
  });
}
