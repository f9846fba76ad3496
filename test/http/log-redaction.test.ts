import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/http/log-redaction.js';
import { newWebhookSecret } from '../../src/webhooks/signing.js';
import { ENGINES } from '../support/engines.js';
import { createHarness, type Harness } from '../support/harness.js';

/** The `url` of every logged request line, in order. */
function loggedUrls(lines: string[]): string[] {
  return lines.flatMap((line) => {
    const entry = JSON.parse(line) as { req?: { url?: string } };
    return entry.req?.url === undefined ? [] : [entry.req.url];
  });
}

describe.each(ENGINES)('request logs (%s)', (engine) => {
  let h: Harness;
  const lines: string[] = [];
  beforeAll(async () => {
    h = await createHarness(engine, { logStream: { write: (line) => void lines.push(line) } });
  });
  afterAll(async () => h.close());

  it('never carry an API key or webhook secret sent in the query string or path', async () => {
    const apiKey = h.org.apiKey;
    const secret = newWebhookSecret();
    const urls = [
      `/v1/events?api_key=${apiKey}`,
      `/v1/events?limit=5&access_token=${apiKey}`,
      `/v1/reports/summary?period=7d&key=${apiKey.slice(11)}`,
      `/v1/events?agent_id=${apiKey}`,
      `/v1/events?agent_id=${encodeURIComponent(secret)}`,
      `/v1/events?agent_id=${apiKey.replace('_', '%5F')}`,
      `/v1/events?agent_id=${encodeURIComponent(apiKey.replace('_', '%5F'))}`,
      `/v1/events?${apiKey}`,
      `/v1/events/${apiKey}`,
      `/v1/events?Password=hunter2&SECRET=s3&apiKey=k&TOKEN=t&authorization=Bearer%20x`,
    ];
    for (const url of urls) await h.request({ method: 'GET', url });

    const output = lines.join('');
    expect(output).toContain('incoming request');
    expect(output).not.toContain(apiKey);
    expect(output).not.toContain(apiKey.slice(11));
    expect(output).not.toContain(secret);
    expect(output).not.toContain(encodeURIComponent(secret));
    expect(output).not.toMatch(/hunter2|s3&|=k&|=t&|Bearer/);

    // Each request's line keeps what is not secret, so the logs still say what was asked.
    const logged = loggedUrls(lines);
    expect(logged).toEqual([
      '/v1/events?api_key=[REDACTED]',
      '/v1/events?limit=5&access_token=[REDACTED]',
      '/v1/reports/summary?period=7d&key=[REDACTED]',
      '/v1/events?agent_id=[REDACTED]',
      '/v1/events?agent_id=[REDACTED]',
      '/v1/events?agent_id=[REDACTED]',
      '/v1/events?agent_id=[REDACTED]',
      '/v1/events?[REDACTED]',
      '/v1/events/[REDACTED]',
      '/v1/events?Password=[REDACTED]&SECRET=[REDACTED]&apiKey=[REDACTED]&TOKEN=[REDACTED]&authorization=[REDACTED]',
    ]);
  });

  it('leave ordinary URLs as they were sent', async () => {
    lines.length = 0;
    const url = '/v1/reports/summary?period=30d&group_by=agent&metadata.client_id=acme%20corp&sort=net_saved';
    await h.request({ method: 'GET', url });
    expect(loggedUrls(lines)).toContain(url);
  });
});

describe('redactUrl', () => {
  it('keeps empty values and malformed escapes as they are', () => {
    expect(redactUrl('/v1/events?api_key=&limit=%zz')).toBe('/v1/events?api_key=&limit=%zz');
    expect(redactUrl('/v1/events?token=%zz')).toBe('/v1/events?token=[REDACTED]');
    expect(redactUrl('/v1/events?x=whsec_%zz')).toBe('/v1/events?x=[REDACTED]');
    expect(redactUrl('/')).toBe('/');
  });
});
