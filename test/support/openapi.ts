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

/**
 * Watches every answer `app` gives (the harness installs it on each test app) and records those
 * the OpenAPI document does not declare: an undeclared status or content type, or a JSON body
 * its schema refuses. Streamed bodies and routes outside the document are not checked.
 */
export function watchResponses(app: FastifyInstance): { violations: Violation[] } {
  const violations: Violation[] = [];
  let doc: OpenApiDocument | null = null;
  let text = '';
  app.addHook('onSend', async (request, reply, payload) => {
    const template = request.routeOptions.url;
    if (template === undefined || !template.startsWith('/v1/')) return payload;
    if (doc === null) {
      doc = app.swagger() as unknown as OpenApiDocument;
      text = JSON.stringify(doc);
    }
    // One validator per test file while the document stays the same (compiling is the cost).
    if (sharedValidator?.doc !== text) {
      const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
      addFormats(ajv);
      ajv.addSchema({ ...doc, $id: DOC_ID });
      sharedValidator = { doc: text, ajv };
    }
    const { ajv } = sharedValidator;
    const path = template.replace(/:(\w+)/g, '{$1}');
    const method = request.method.toLowerCase();
    const operation = doc.paths[path]?.[method];
    if (!operation) return payload;
    const status = String(reply.statusCode);
    const declared = operation.responses[status] ? status : `${status[0]}XX`;
    const response = operation.responses[declared];
    const record = (problem: string) =>
      violations.push({ operation: operation.operationId, status: reply.statusCode, problem });
    if (!response) {
      record('status not declared');
      return payload;
    }
    if (!response.content) return payload;
    const type = String(reply.getHeader('content-type') ?? '').split(';')[0] ?? '';
    if (!(type in response.content)) {
      record(`content type ${type} not declared`);
      return payload;
    }
    if (type !== 'application/json' || typeof payload !== 'string') return payload;
    const ref = `${DOC_ID}#/${pointer('paths', path, method, 'responses', declared, 'content', type, 'schema')}`;
    const validate = ajv.getSchema(ref);
    if (!validate) {
      record(`no schema at ${ref}`);
      return payload;
    }
    if (!validate(JSON.parse(payload))) record(ajv.errorsText(validate.errors));
    return payload;
  });
  return { violations };
}
