import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/engines.js';
import {
  createExporter,
  EXPORTERS,
  exportSpans,
  listEvents,
  recordingTracer,
  startOtlpServer,
  succeeded,
  type OtlpServer,
} from './support.js';

describe.each(ENGINES)('smoke (%s)', (engine) => {
  let s: OtlpServer;
  beforeAll(async () => {
    s = await startOtlpServer(engine);
  });
  afterAll(async () => s.close());

  it.each(EXPORTERS)('tracks a run exported with the %s exporter', async (kind) => {
    const { tracer, finished } = recordingTracer();
    tracer.startActiveSpan(
      'invoke_agent support-bot',
      {
        attributes: {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': `support-bot-${kind}`,
          'tally.task_type': 'support_ticket_reply',
        },
      },
      (root) => {
        tracer.startActiveSpan(
          'chat gpt-4o-mini',
          {
            attributes: {
              'gen_ai.operation.name': 'chat',
              'gen_ai.provider.name': 'openai',
              'gen_ai.request.model': 'gpt-4o-mini',
              'gen_ai.usage.input_tokens': 1000,
              'gen_ai.usage.output_tokens': 200,
            },
          },
          (chat) => chat.end(),
        );
        root.end();
      },
    );
    const exporter = createExporter(kind, { origin: s.origin, apiKey: s.h.org.apiKey });
    const result = await exportSpans(exporter, finished());
    expect(result.error).toBeUndefined();
    expect(succeeded(result)).toBe(true);
    const events = await listEvents(s.h);
    const event = events.find((e) => e.agent_id === `support-bot-${kind}`);
    expect(event).toMatchObject({
      task_type: 'support_ticket_reply',
      outcome: 'success',
      tokens_in: 1000,
      tokens_out: 200,
    });
    await exporter.shutdown();
  });
});
