import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { deflateSync, gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { decodeBody } from '../../src/http/content-encoding.js';
import { BODY_LIMIT_BYTES } from '../../src/http/server.js';
import { ENGINES } from '../support/engines.js';
import { expectError } from '../support/errors.js';
import { createHarness, type Harness } from '../support/harness.js';
import { unlimited } from '../reports/unlimited.js';

const EVENT = { agent_id: 'zip-bot', task_type: 'sales_crm_update', outcome: 'success' };

/** A track body padded with trailing whitespace to `bytes` bytes (still valid JSON). */
function paddedTrack(bytes: number): string {
  const json = JSON.stringify(EVENT);
  return json + ' '.repeat(bytes - json.length);
}

describe.each(ENGINES)('compressed request bodies (%s)', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    // Without rate limits: a batch's events each count toward the per-second limit.
    h = await createHarness(engine, { rateLimiter: unlimited });
  });
  afterAll(async () => h.close());

  async function events(): Promise<number> {
    const row = await h.storage.db
      .selectFrom('events')
      .select(sql<number>`count(*)`.as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  const post = (url: string, payload: Buffer | string, encoding?: string) =>
    h.request({
      method: 'POST',
      url,
      payload,
      headers: {
        'content-type': 'application/json',
        ...(encoding === undefined ? {} : { 'content-encoding': encoding }),
      },
    });

  it('reads gzip and deflate bodies (any case, x-gzip too) and identity as sent', async () => {
    const before = await events();
    const body = JSON.stringify(EVENT);
    const sent: Array<[Buffer | string, string]> = [
      [gzipSync(body), 'gzip'],
      [gzipSync(body), 'GZip'],
      [gzipSync(body), 'x-gzip'],
      [deflateSync(body), 'deflate'],
      [body, 'identity'],
      [gzipSync(body), 'identity, gzip'],
    ];
    for (const [payload, encoding] of sent) {
      const res = await post('/v1/track', payload, encoding);
      expect(res.statusCode, `${encoding}: ${res.body}`).toBe(201);
      expect(res.json()).toMatchObject({ agent_id: 'zip-bot' });
    }
    expect(await events()).toBe(before + sent.length);
  });

  it('answers 415 with Accept-Encoding to a coding it cannot undo, and stores nothing', async () => {
    const before = await events();
    const body = JSON.stringify(EVENT);
    // Sent as plain JSON: a server ignoring the header would have stored it.
    for (const encoding of ['br', 'zstd', 'compress', 'gzip, br', 'gzip, gzip', 'constructor', '__proto__']) {
      const res = await post('/v1/track', body, encoding);
      const error = expectError(res, 415, 'unsupported_media_type');
      expect(error.message).toContain('Content-Encoding');
      expect(res.headers['accept-encoding']).toBe('gzip, deflate, identity');
    }
    expect(await events()).toBe(before);
  });

  it('applies the body limit to the decoded body: a gzip bomb is 413, just under the limit is read', async () => {
    const before = await events();
    // 16 MiB of spaces in a valid JSON document: about 16 KiB once compressed.
    const bomb = gzipSync(paddedTrack(16 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(BODY_LIMIT_BYTES);
    expectError(await post('/v1/track', bomb, 'gzip'), 413, 'payload_too_large');
    expectError(
      await post('/v1/track', gzipSync(paddedTrack(BODY_LIMIT_BYTES + 1)), 'gzip'),
      413,
      'payload_too_large',
    );
    expect((await post('/v1/track', gzipSync(paddedTrack(BODY_LIMIT_BYTES)), 'gzip')).statusCode).toBe(201);
    expect(await events()).toBe(before + 1);
  });

  it('decodes up to the route’s own limit: a batch of 1 MiB sent gzipped', async () => {
    const batch = JSON.stringify({
      events: Array.from({ length: 400 }, () => ({ ...EVENT, metadata: { pad: 'x'.repeat(2500) } })),
    });
    expect(batch.length).toBeGreaterThan(BODY_LIMIT_BYTES * 15);
    const res = await post('/v1/track/batch', gzipSync(batch), 'gzip');
    expect(res.statusCode, res.body).toBe(207);
    expect(res.json<{ data: Array<{ status: number }> }>().data.every((d) => d.status === 201)).toBe(true);
  });

  it('answers 400 bad_request to a body that is not what its coding says, and 404 still reads the body', async () => {
    const before = await events();
    const whole = gzipSync(JSON.stringify(EVENT));
    expectError(await post('/v1/track', JSON.stringify(EVENT), 'gzip'), 400, 'bad_request');
    expectError(await post('/v1/track', whole.subarray(0, whole.length - 6), 'gzip'), 400, 'bad_request');
    expectError(await post('/v1/track', gzipSync(JSON.stringify(EVENT)), 'deflate'), 400, 'bad_request');
    expectError(await post('/v1/nowhere', whole, 'gzip'), 404, 'not_found');
    expect(await events()).toBe(before);
  });

  it('answers a bomb, a bad coding and corrupt data over keep-alive, then the next request', async () => {
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = h.app.server.address() as AddressInfo;
    let connections = 0;
    h.app.server.on('connection', () => connections++);
    let closed = 0;
    const client = new Client(`http://127.0.0.1:${port}`, { pipelining: 1 });
    const headers = (encoding: string) => ({
      authorization: `Bearer ${h.org.apiKey}`,
      'content-type': 'application/json',
      'content-encoding': encoding,
    });
    try {
      const bodies: Array<[Buffer, string, number]> = [
        [gzipSync(paddedTrack(8 * 1024 * 1024)), 'gzip', 413],
        [Buffer.from(JSON.stringify(EVENT)), 'br', 415],
        [Buffer.from('not gzip at all'), 'gzip', 400],
        [gzipSync(JSON.stringify(EVENT)), 'gzip', 201],
      ];
      for (const [body, encoding, status] of bodies) {
        const res = await client.request({
          method: 'POST',
          path: '/v1/track',
          headers: headers(encoding),
          body,
        });
        await res.body.dump();
        expect(res.statusCode, encoding).toBe(status);
        if (res.headers.connection === 'close') closed++;
      }
      // Node closes a connection it answered before the request's end (the bomb, the corrupt
      // body), and keeps the others: nothing is left half-read on a connection that goes on.
      expect(closed).toBeLessThan(bodies.length);
      expect(connections).toBe(1 + closed);
    } finally {
      await client.close();
    }
  });
});

describe('decodeBody', () => {
  it('stops inflating a bomb once past the limit: at most the limit and one chunk', async () => {
    const limit = 64 * 1024;
    // 256 MiB of zeros, about 256 KiB compressed.
    const bomb = gzipSync(Buffer.alloc(256 * 1024 * 1024));
    const decoded = decodeBody(Readable.from([bomb]), 'gzip', limit);
    const error = await new Promise<unknown>((resolve) => {
      decoded.on('error', resolve);
      decoded.on('end', () => resolve(null));
      decoded.resume();
    });
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('payload_too_large');
    expect(decoded.decodedLength).toBeGreaterThan(limit);
    expect(decoded.decodedLength).toBeLessThanOrEqual(limit + 16 * 1024);
  });

  it('counts the bytes as sent, for the Content-Length check', async () => {
    const body = gzipSync(paddedTrack(10_000));
    const decoded = decodeBody(Readable.from([body.subarray(0, 100), body.subarray(100)]), 'gzip', 64 * 1024);
    const chunks: Buffer[] = [];
    for await (const chunk of decoded) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe(paddedTrack(10_000));
    expect(decoded.receivedEncodedLength).toBe(body.length);
    expect(decoded.decodedLength).toBe(10_000);
  });
});
