import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';

const addFormats = addFormatsModule.default;
const DOC_ID = 'https://tally.invalid/openapi.json';

interface Response {
  description: string;
  content?: Record<string, { schema: object }>;
}
type Operation = { operationId: string; responses: Record<string, Response> };
export type OpenApiDocument = { paths: Record<string, Record<string, Operation>> } & Record<string, unknown>;

const pointer = (...parts: string[]) =>
  parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

/**
 * Checks live responses against the schema the OpenAPI document declares for their path,
 * method, status and content type, and records which operations and statuses were seen.
 */
export function responseChecker(doc: OpenApiDocument) {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema({ ...doc, $id: DOC_ID });
  const compiled = new Map<string, ValidateFunction>();
  const seen = new Map<string, Set<string>>();

  function check(res: LightMyRequestResponse, method: string, path: string): void {
    const operation = doc.paths[path]?.[method.toLowerCase()];
    expect(operation, `${method} ${path} is not in the document`).toBeDefined();
    if (!operation) return;
    const status = String(res.statusCode);
    const declared = operation.responses[status] ? status : `${status[0]}XX`;
    const response = operation.responses[declared];
    expect(response, `${operation.operationId}: status ${status} is not declared`).toBeDefined();
    if (!response) return;
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    const statuses = seen.get(operation.operationId) ?? new Set<string>();
    statuses.add(status);
    seen.set(operation.operationId, statuses);
    if (!response.content) {
      expect(res.body, `${operation.operationId} ${status} declares no body`).toBe('');
      return;
    }
    const type = String(res.headers['content-type'] ?? '').split(';')[0] ?? '';
    expect(Object.keys(response.content), `${operation.operationId} ${status}: content type`).toContain(type);
    if (type !== 'application/json') {
      expect(typeof res.body).toBe('string');
      return;
    }
    const ref = `${DOC_ID}#/${pointer('paths', path, method.toLowerCase(), 'responses', declared, 'content', type, 'schema')}`;
    let validate = compiled.get(ref);
    if (!validate) {
      validate = ajv.compile({ $ref: ref });
      compiled.set(ref, validate);
    }
    const body: unknown = res.json();
    const valid = validate(body);
    expect(
      valid,
      `${operation.operationId} ${status}: ${ajv.errorsText(validate.errors)}\n${res.body.slice(0, 500)}`,
    ).toBe(true);
  }

  return {
    check,
    /** Operation ids with the statuses seen for each. */
    seen: () => new Map(seen),
  };
}

interface Violation {
  operation: string;
  status: number;
  problem: string;
}

let sharedValidator: { doc: string; ajv: Ajv2020 } | null = null;

interface Seen {
  template: string;
  method: string;
  status: number;
  type: string;
  payload: string | null;
}

/**
 * Watches every answer `app` gives (the harness installs it on each test app); `violations()`
 * then lists those the OpenAPI document does not declare: an undeclared status or content type,
 * or a JSON body its schema refuses. Answers are only recorded while the test runs (checking
 * them then would slow the first answers down, which timing tests feel); streamed bodies and
 * routes outside the document are not checked.
 */
export function watchResponses(app: FastifyInstance): { violations: () => Violation[] } {
  const seen: Seen[] = [];
  app.addHook('onSend', async (request, reply, payload) => {
    const template = request.routeOptions.url;
    if (template !== undefined && template.startsWith('/v1/')) {
      seen.push({
        template,
        method: request.method.toLowerCase(),
        status: reply.statusCode,
        type: String(reply.getHeader('content-type') ?? '').split(';')[0] ?? '',
        payload: typeof payload === 'string' ? payload : null,
      });
    }
    return payload;
  });
  return {
    violations() {
      if (seen.length === 0) return [];
      const doc = app.swagger() as unknown as OpenApiDocument;
      const text = JSON.stringify(doc);
      // One validator per test file while the document stays the same (compiling is the cost).
      if (sharedValidator?.doc !== text) {
        const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
        addFormats(ajv);
        ajv.addSchema({ ...doc, $id: DOC_ID });
        sharedValidator = { doc: text, ajv };
      }
      const { ajv } = sharedValidator;
      const violations: Violation[] = [];
      for (const answer of seen.splice(0)) {
        const path = answer.template.replace(/:(\w+)/g, '{$1}');
        const operation = doc.paths[path]?.[answer.method];
        if (!operation) continue;
        const status = String(answer.status);
        const declared = operation.responses[status] ? status : `${status[0]}XX`;
        const response = operation.responses[declared];
        const record = (problem: string) =>
          violations.push({ operation: operation.operationId, status: answer.status, problem });
        if (!response) {
          record('status not declared');
          continue;
        }
        if (!response.content) continue;
        if (!(answer.type in response.content)) {
          record(`content type ${answer.type} not declared`);
          continue;
        }
        if (answer.type !== 'application/json' || answer.payload === null) continue;
        const ref = `${DOC_ID}#/${pointer('paths', path, answer.method, 'responses', declared, 'content', answer.type, 'schema')}`;
        const validate = ajv.getSchema(ref);
        if (!validate) record(`no schema at ${ref}`);
        else if (!validate(JSON.parse(answer.payload))) record(ajv.errorsText(validate.errors));
      }
      return violations;
    },
  };
}
