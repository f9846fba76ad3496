import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../support/harness.js';

describe('task types in the OpenAPI document', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness('sqlite');
  });
  afterAll(async () => h.close());

  it('documents every task type and audit log route with its response schema', async () => {
    const doc = (await h.request({ method: 'GET', url: '/openapi.json', apiKey: null })).json();
    const paths = doc.paths as Record<string, Record<string, { tags: string[]; responses: object }>>;
    expect(Object.keys(paths['/v1/task-types'] ?? {})).toEqual(expect.arrayContaining(['get', 'post']));
    expect(Object.keys(paths['/v1/task-types/{key}/override'] ?? {})).toEqual(
      expect.arrayContaining(['post', 'delete']),
    );
    expect(paths['/v1/task-types/{key}']?.delete?.tags).toEqual(['task-types']);
    expect(paths['/v1/task-types']?.post?.responses).toHaveProperty('201');
    expect(paths['/v1/audit-log']?.get?.responses).toHaveProperty('200');
  });
});
