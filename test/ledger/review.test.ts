import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldOnce } from '../../src/fold/pass.js';
import { reviewFigures } from '../../src/ledger/figures.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, pausedStageOptions, type Harness, type TestOrg } from '../support/harness.js';

const NOW = Date.parse('2026-11-20T12:00:00.000Z');

describe('review figures (docs/figures.md)', () => {
  it('saves the baseline minus the review time, or costs the review time when rejected', () => {
    // 60 minutes' baseline at 50.00 an hour, reviewed for 15 minutes.
    const rate = 50_000_000;
    expect(
      reviewFigures({ verdict: 'accepted', reviewMinutes: 15, baselineMinutes: 60, hourlyRateMicros: rate }),
    ).toEqual({
      hoursSavedMicros: 750_000,
      costSavedMicros: 37_500_000,
      reviewHoursMicros: 250_000,
      reviewCostMicros: 12_500_000,
    });
    expect(
      reviewFigures({ verdict: 'rejected', reviewMinutes: 15, baselineMinutes: 60, hourlyRateMicros: rate }),
    ).toEqual({
      hoursSavedMicros: -250_000,
      costSavedMicros: -12_500_000,
      reviewHoursMicros: 250_000,
      reviewCostMicros: 12_500_000,
    });
    // A fix that took longer than doing it by hand: below zero.
    expect(
      reviewFigures({ verdict: 'corrected', reviewMinutes: 90, baselineMinutes: 60, hourlyRateMicros: rate })
        .hoursSavedMicros,
    ).toBe(-500_000);
    // Rounded once, half away from zero, on both sides of zero: 1 micro-minute is 1/60 micro-hour.
    expect(
      reviewFigures({
        verdict: 'rejected',
        reviewMinutes: 0.00003,
        baselineMinutes: 1,
        hourlyRateMicros: rate,
      }).hoursSavedMicros,
    ).toBe(-1);
  });
});

describe.each(ENGINES)('measured review (%s)', (engine) => {
  let h: Harness;
  let org: TestOrg;
  beforeAll(async () => {
    h = await createHarness(engine, pausedStageOptions(NOW));
    org = await h.createOrg({ plan: 'pro', hourlyRate: 50 });
  });
  afterAll(async () => h.close());

  const track = async (outcome: string, extra: object = {}) => {
    const res = await h.request({
      method: 'POST',
      url: '/v1/track',
      apiKey: org.apiKey,
      payload: {
        agent_id: 'bot',
        task_type: 'support_ticket_reply',
        outcome,
        human_baseline_minutes: 60,
        agent_cost: 1.5,
        metadata: { client_id: 'acme' },
        ...extra,
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { event_id: string; hours_saved: number; cost_saved: number };
  };
  const review = (eventId: string, payload: object, key?: string) =>
    h.request({
      method: 'POST',
      url: `/v1/events/${eventId}/review`,
      apiKey: org.apiKey,
      payload,
      ...(key === undefined ? {} : { headers: { 'idempotency-key': key } }),
    });
  const report = async (query = 'group_by=agent') => {
    const res = await h.request({
      method: 'GET',
      url: `/v1/reports/time-saved?period=30d&${query}`,
      apiKey: org.apiKey,
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().rows as Array<Record<string, unknown>>;
  };

  it('replaces the outcome credit with the measured time, keeps history, and reports it before and after folding', async () => {
    const event = await track('needs_review');
    // needs_review is credited half its baseline.
    expect(event.hours_saved).toBe(0.5);
    await foldOnce(h.ctx);
    expect(await report()).toEqual([
      expect.objectContaining({
        events: 1,
        hours_saved: 0.5,
        cost_saved: 25,
        review_hours: 0,
        review_cost: 0,
      }),
    ]);

    const first = await review(event.event_id, { review_minutes: 15, verdict: 'accepted', reviewer: 'ana' });
    expect(first.statusCode, first.body).toBe(201);
    expect(first.json().review).toMatchObject({ verdict: 'accepted', review_minutes: 15, reviewer: 'ana' });
    expect(first.json().event).toMatchObject({
      event_id: event.event_id,
      hours_saved: 0.5,
      current: {
        hours_saved: 0.75,
        cost_saved: 37.5,
        agent_cost: 1.5,
        net_saved: 36,
        review_hours: 0.25,
        review_cost: 12.5,
      },
    });
    // Read-your-writes: the entry is in the adjustments' tail, not folded yet.
    const expected = {
      events: 1,
      hours_saved: 0.75,
      cost_saved: 37.5,
      agent_cost: 1.5,
      net_saved: 36,
      review_hours: 0.25,
      review_cost: 12.5,
    };
    expect(await report()).toEqual([expect.objectContaining(expected)]);
    await foldOnce(h.ctx);
    expect(await report()).toEqual([expect.objectContaining(expected)]);
    // Every grain, so every fold part, and the raw path.
    expect(await report('group_by=agent,task_type,client')).toEqual([expect.objectContaining(expected)]);
    expect(await report('group_by=day&metadata.channel=x')).toEqual([]);

    // A second review replaces the first: its entry is the difference from the first.
    const second = await review(event.event_id, {
      review_minutes: 30,
      verdict: 'rejected',
      note: 'wrong answer',
    });
    expect(second.statusCode, second.body).toBe(201);
    expect(second.json().event.current).toEqual({
      hours_saved: -0.5,
      cost_saved: -25,
      agent_cost: 1.5,
      net_saved: -26.5,
      review_hours: 0.5,
      review_cost: 25,
    });
    const ledger = await h.request({
      method: 'GET',
      url: `/v1/events/${event.event_id}/adjustments`,
      apiKey: org.apiKey,
    });
    expect(ledger.statusCode).toBe(200);
    expect(ledger.json().original).toMatchObject({ hours_saved: 0.5, cost_saved: 25, review_hours: 0 });
    expect(
      ledger
        .json()
        .data.map((a: { cause: string; hours_saved: number; review_hours: number }) => [
          a.cause,
          a.hours_saved,
          a.review_hours,
        ]),
    ).toEqual([
      ['review', 0.25, 0.25],
      ['review', -1.25, 0.25],
    ]);
    expect(ledger.json().review).toMatchObject({ verdict: 'rejected', note: 'wrong answer' });
    const reviews = await h.request({
      method: 'GET',
      url: `/v1/events/${event.event_id}/reviews`,
      apiKey: org.apiKey,
    });
    expect(reviews.json().data.map((r: { verdict: string }) => r.verdict)).toEqual(['accepted', 'rejected']);
    const after = {
      events: 1,
      hours_saved: -0.5,
      cost_saved: -25,
      agent_cost: 1.5,
      net_saved: -26.5,
      review_hours: 0.5,
      review_cost: 25,
    };
    expect(await report('group_by=agent,client')).toEqual([expect.objectContaining(after)]);
    await foldOnce(h.ctx);
    expect(await report('group_by=agent,client')).toEqual([expect.objectContaining(after)]);
    expect(await report('group_by=agent&outcome=needs_review')).toEqual([expect.objectContaining(after)]);
    expect(await report('group_by=agent&outcome=success')).toEqual([]);
    // The event's own row is unchanged.
    const stored = await h.request({
      method: 'GET',
      url: `/v1/events/${event.event_id}`,
      apiKey: org.apiKey,
    });
    expect(stored.json().hours_saved).toBe(0.5);
    // CSV carries the review columns after the spec's.
    const csv = await h.request({
      method: 'GET',
      url: '/v1/reports/time-saved?period=30d&group_by=agent&format=csv',
      apiKey: org.apiKey,
    });
    const [header, row] = csv.body.trim().split('\r\n');
    expect(header).toBe(
      'agent_id,events,hours_saved,cost_saved,agent_cost,net_saved,review_hours,review_cost',
    );
    expect(row).toBe('bot,1,-0.5,-25,1.5,-26.5,0.5,25');
    // The audit log records both reviews.
    const audit = await h.ctx.db
      .selectFrom('audit_log')
      .select(['action', 'target'])
      .where('org_id', '=', org.id)
      .where('action', '=', 'event.reviewed')
      .execute();
    expect(audit).toHaveLength(2);
  });

  it('is idempotent with Idempotency-Key, and any event can be reviewed', async () => {
    const event = await track('success');
    const once = await review(event.event_id, { review_minutes: 6, verdict: 'corrected' }, 'k-1');
    expect(once.statusCode, once.body).toBe(201);
    const again = await review(event.event_id, { review_minutes: 6, verdict: 'corrected' }, 'k-1');
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json().review.id).toBe(once.json().review.id);
    const rows = await h.ctx.db
      .selectFrom('adjustments')
      .select('id')
      .where('event_id', '=', event.event_id)
      .execute();
    expect(rows).toHaveLength(1);
    expect(once.json().event.current.hours_saved).toBe(0.9);
    const other = await track('success');
    const reused = await review(other.event_id, { review_minutes: 6, verdict: 'corrected' }, 'k-1');
    expect(reused.statusCode).toBe(422);
    expect(reused.json().error.code).toBe('validation_error');
  });

  it('refuses bad input and unknown events without a 5xx', async () => {
    const event = await track('needs_review');
    for (const payload of [
      { review_minutes: -1, verdict: 'accepted' },
      { review_minutes: 'x', verdict: 'accepted' },
      { review_minutes: 1e300, verdict: 'accepted' },
      { review_minutes: 5, verdict: 'maybe' },
      { review_minutes: 5, verdict: 'accepted', reviewer: 'r'.repeat(201) },
      { review_minutes: 5, verdict: 'accepted', note: 'n'.repeat(2001) },
      { review_minutes: 5, verdict: 'accepted', extra: 1 },
      { verdict: 'accepted' },
    ]) {
      const res = await review(event.event_id, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(422);
      expect(res.json().error.code).toBe('validation_error');
    }
    const missing = await review('evt_missing', { review_minutes: 5, verdict: 'accepted' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('not_found');
    const ledger = await h.request({
      method: 'GET',
      url: '/v1/events/evt_missing/adjustments',
      apiKey: org.apiKey,
    });
    expect(ledger.statusCode).toBe(404);
  });

  it('lists the events awaiting review and writes the event.reviewed webhook message', async () => {
    const fresh = await h.createOrg({ plan: 'pro' });
    const hook = await h.request({
      method: 'POST',
      url: '/v1/webhooks',
      apiKey: fresh.apiKey,
      payload: { url: 'https://example.com/hook', event_types: ['event.reviewed'] },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    const ids: string[] = [];
    for (const outcome of ['needs_review', 'success', 'needs_review']) {
      const res = await h.request({
        method: 'POST',
        url: '/v1/track',
        apiKey: fresh.apiKey,
        payload: { agent_id: 'bot', task_type: 'support_ticket_reply', outcome },
      });
      ids.push(res.json().event_id);
    }
    const awaiting = async () =>
      (await h.request({ method: 'GET', url: '/v1/events?awaiting_review=true', apiKey: fresh.apiKey }))
        .json()
        .data.map((e: { event_id: string }) => e.event_id)
        .sort();
    // On the harness's fixed clock, events of one instant list in no set order.
    expect(await awaiting()).toEqual([ids[0], ids[2]].sort());
    const res = await h.request({
      method: 'POST',
      url: `/v1/events/${ids[0]}/review`,
      apiKey: fresh.apiKey,
      payload: { review_minutes: 3, verdict: 'accepted' },
    });
    expect(res.statusCode).toBe(201);
    expect(await awaiting()).toEqual([ids[2]]);
    const messages = await h.ctx.db
      .selectFrom('webhook_messages')
      .select(['type', 'payload'])
      .where('org_id', '=', fresh.id)
      .where('type', '=', 'event.reviewed')
      .execute();
    expect(messages).toHaveLength(1);
    const payload = JSON.parse(messages[0]?.payload ?? '{}');
    expect(payload.event.event_id).toBe(ids[0]);
    expect(payload.event.review.review_minutes).toBe(3);
    expect(payload.event.current).toEqual(res.json().event.current);
  });
});
