import swagger from '@fastify/swagger';
import Fastify, { type FastifySchema } from 'fastify';
import { describe, expect, it } from 'vitest';
import { SWAGGER_OPTIONS } from '../../src/http/openapi.js';
import { watchResponses } from '../support/openapi.js';

describe('the harness watch on answers', () => {
  it('records an undeclared status, an undeclared content type and a body its schema refuses', async () => {
    const app = Fastify({ logger: false });
    await app.register(swagger, SWAGGER_OPTIONS);
    const schema = (operationId: string): FastifySchema => ({
      operationId,
      response: {
        200: { type: 'object', properties: { n: { type: 'integer', minimum: 5 } }, required: ['n'] },
      },
    });
    app.get('/v1/fine', { schema: schema('fine') }, async () => ({ n: 7 }));
    app.get('/v1/status', { schema: schema('status') }, async (_req, reply) =>
      reply.code(201).send({ n: 7 }),
    );
    app.get('/v1/type', { schema: schema('type') }, async (_req, reply) =>
      reply.type('text/plain').send('7'),
    );
    app.get('/v1/body', { schema: schema('body') }, async () => ({ n: 1 }));
    const watched = watchResponses(app);
    for (const url of ['/v1/fine', '/v1/status', '/v1/type', '/v1/body']) await app.inject({ url });
    const violations = watched.violations();
    await app.close();
    expect(violations).toEqual([
      { operation: 'status', status: 201, problem: 'status not declared' },
      { operation: 'type', status: 200, problem: 'content type text/plain not declared' },
      { operation: 'body', status: 200, problem: expect.stringContaining('must be >= 5') },
    ]);
  });
});
