import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';

const valid = { agent_id: 'bot-1', task_type: 'support_ticket_reply', outcome: 'success' };
const DAY = 24 * 60 * 60 * 1000;

describe.each(ENGINES)('POST /v1/track validation (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(engine);
  });
  afterAll(async () => h.close());

  const track = (payload: unknown, headers: Record<string, string> = {}) =>
    h.request({ method: 'POST', url: '/v1/track', payload: payload as object, headers });

  async function expectInvalid(payload: unknown, path: string, headers: Record<string, string> = {}) {
    const res = await track(payload, headers);
    expect(res.statusCode, res.body).toBe(422);
    const body = res.json();
    expect(body.error.code).toBe('validation_error');
    expect(body.error.request_id).toBe(res.headers['x-request-id']);
    expect(body.error.details.map((d: { path: string }) => d.path)).toContain(path);
  }

  it.each([
    ['agent_id missing', { task_type: 'x', outcome: 'success' }, '/body/agent_id'],
    ['task_type missing', { agent_id: 'a', outcome: 'success' }, '/body/task_type'],
    ['outcome missing', { agent_id: 'a', task_type: 'x' }, '/body/outcome'],
    ['outcome not in the enum', { ...valid, outcome: 'done' }, '/body/outcome'],
    ['empty agent_id', { ...valid, agent_id: '' }, '/body/agent_id'],
    ['agent_id of 201 characters', { ...valid, agent_id: 'a'.repeat(201) }, '/body/agent_id'],
    ['an unknown field', { ...valid, colour: 'blue' }, '/body/colour'],
    ['negative agent_cost', { ...valid, agent_cost: -1 }, '/body/agent_cost'],
    ['agent_cost as a string', { ...valid, agent_cost: '5' }, '/body/agent_cost'],
    ['negative duration', { ...valid, agent_duration_seconds: -0.5 }, '/body/agent_duration_seconds'],
    ['fractional tokens', { ...valid, tokens_in: 1.5 }, '/body/tokens_in'],
    ['zero baseline', { ...valid, human_baseline_minutes: 0 }, '/body/human_baseline_minutes'],
    ['baseline over a year', { ...valid, human_baseline_minutes: 525601 }, '/body/human_baseline_minutes'],
    ['metadata not an object', { ...valid, metadata: [1, 2] }, '/body/metadata'],
    ['metadata over 16 KiB', { ...valid, metadata: { blob: 'x'.repeat(16 * 1024) } }, '/body/metadata'],
    [
      'input excerpt over 2000 characters',
      { ...valid, audit_sample: { input_excerpt: 'x'.repeat(2001) } },
      '/body/audit_sample/input_excerpt',
    ],
    ['unknown audit_sample field', { ...valid, audit_sample: { prompt: 'x' } }, '/body/audit_sample/prompt'],
    ['occurred_at without a zone', { ...valid, occurred_at: '2026-11-20T10:00:00' }, '/body/occurred_at'],
    ['occurred_at not a time', { ...valid, occurred_at: 'yesterday' }, '/body/occurred_at'],
  ])('rejects %s', async (_name, payload, path) => {
    await expectInvalid(payload, path);
  });

  it('accepts excerpts of exactly 2000 characters, never cutting them', async () => {
    const res = await track({
      ...valid,
      audit_sample: { input_excerpt: 'é'.repeat(2000), output_excerpt: 'y' },
    });
    expect(res.statusCode).toBe(201);
  });

  it('accepts metadata of exactly 16 KiB serialized', async () => {
    const filler = 'x'.repeat(16 * 1024 - '{"blob":""}'.length);
    expect(Buffer.byteLength(JSON.stringify({ blob: filler }))).toBe(16 * 1024);
    const res = await track({ ...valid, metadata: { blob: filler } });
    expect(res.statusCode).toBe(201);
  });

  it.each([
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
    ['a control character', 'key\u0007'],
  ])('rejects an Idempotency-Key that is %s', async (_name, key) => {
    await expectInvalid(valid, '/headers/idempotency-key', { 'idempotency-key': key });
  });

  it('accepts an Idempotency-Key of 255 printable characters', async () => {
    const res = await track(valid, { 'idempotency-key': '~'.repeat(255) });
    expect(res.statusCode).toBe(201);
  });

  it('rejects an unknown task type without a baseline, naming the field', async () => {
    const res = await track({ ...valid, task_type: 'made_up_type' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toMatchObject({
      code: 'unknown_task_type',
      details: [{ path: '/body/task_type', message: 'is not in the catalogue' }],
    });
  });

  it('takes an unknown task type when the request brings its baseline', async () => {
    const res = await track({ ...valid, task_type: 'made_up_type', human_baseline_minutes: 12 });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ resolved_baseline_source: 'request', resolved_baseline_minutes: 12 });
  });

  describe('occurred_at window', () => {
    const at = (offsetMs: number) => new Date(h.clock.now().getTime() + offsetMs).toISOString();

    it.each([
      ['exactly 90 days ago', -90 * DAY],
      ['exactly 24 hours ahead', DAY],
      ['just now', 0],
    ])('accepts %s', async (_name, offset) => {
      const res = await track({ ...valid, occurred_at: at(offset) });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json().occurred_at).toBe(at(offset));
    });

    it.each([
      ['a millisecond more than 90 days ago', -90 * DAY - 1],
      ['a millisecond more than 24 hours ahead', DAY + 1],
    ])('rejects %s', async (_name, offset) => {
      const res = await track({ ...valid, occurred_at: at(offset) });
      expect(res.statusCode).toBe(422);
      expect(res.json().error.code).toBe('occurred_at_out_of_range');
    });

    it('normalises an offset time zone to UTC with milliseconds', async () => {
      const res = await track({ ...valid, occurred_at: '2026-11-20T13:30:00+02:00' });
      expect(res.statusCode).toBe(201);
      expect(res.json().occurred_at).toBe('2026-11-20T11:30:00.000Z');
    });
  });

  it('stores nothing for a rejected call', async () => {
    const before = (await h.request({ method: 'GET', url: '/v1/events?limit=100' })).json().data.length;
    await track({ ...valid, outcome: 'nope' });
    await track({ ...valid, task_type: 'nope_nope' });
    const after = (await h.request({ method: 'GET', url: '/v1/events?limit=100' })).json().data.length;
    expect(after).toBe(before);
  });
});
