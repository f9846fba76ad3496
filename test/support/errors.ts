import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';

export const REQUEST_ID = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;

/**
 * Asserts the one error body of DESIGN §2: exactly `{error: {code, message, request_id}}`
 * (plus `details` only for validation errors), with `request_id` equal to `X-Request-Id`.
 */
export function expectError(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = res.json<{ error: Record<string, unknown> }>();
  expect(Object.keys(body)).toEqual(['error']);
  const keys =
    code === 'validation_error'
      ? ['code', 'message', 'details', 'request_id']
      : ['code', 'message', 'request_id'];
  expect(Object.keys(body.error).sort()).toEqual(keys.sort());
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message).not.toBe('');
  expect(body.error.request_id).toMatch(REQUEST_ID);
  expect(body.error.request_id).toBe(res.headers['x-request-id']);
  return body.error;
}
