import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';

/** Marks a route schema as a named component; see `named` in schemas.ts. */
export const COMPONENT = 'x-tally-component';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const header = (description: string, schema: Json) => ({ description, schema });

/** Response headers of DESIGN §2 and §4, documented once and referenced from every response. */
const HEADERS = {
  'X-Request-Id': header('Id of this request (`req_…`); the same as `error.request_id`', {
    type: 'string',
    pattern: '^req_[0-9A-Z]{26}$',
  }),
  'RateLimit-Limit': header('Requests per second this API key may make on this endpoint class', {
    type: 'integer',
  }),
  'RateLimit-Remaining': header('Requests left in the current one-second window', { type: 'integer' }),
  'RateLimit-Reset': header('Whole seconds until the window resets', { type: 'integer' }),
  'Retry-After': header('Seconds to wait before retrying: on 429 (1) and 503 (5)', { type: 'integer' }),
  'Idempotent-Replayed': header(
    '`true` when the answer replays the event stored under the same Idempotency-Key',
    {
      type: 'string',
      enum: ['true'],
    },
  ),
};
const refHeader = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });

/**
 * Replaces every schema marked with COMPONENT by a `$ref` to `#/components/schemas/<name>`,
 * innermost first. Two different schemas under one name are a programming error.
 */
function hoist(node: unknown, schemas: Json): unknown {
  if (Array.isArray(node)) return node.map((item) => hoist(item, schemas));
  if (!isObject(node)) return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) if (key !== COMPONENT) out[key] = hoist(value, schemas);
  const name = node[COMPONENT];
  if (typeof name !== 'string') return out;
  const existing = schemas[name];
  if (existing === undefined) schemas[name] = out;
  else if (JSON.stringify(existing) !== JSON.stringify(out)) {
    throw new Error(`OpenAPI: two different schemas are named ${name}`);
  }
  return { $ref: `#/components/schemas/${name}` };
}

interface Operation {
  operationId?: string;
  parameters?: { in: string; required?: boolean; schema?: Json }[];
  responses?: Record<string, { headers?: Json }>;
}

function addHeaders(path: string, operation: Operation): void {
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    const headers: Json = { 'X-Request-Id': refHeader('X-Request-Id') };
    if (path.startsWith('/v1/')) {
      headers['RateLimit-Limit'] = refHeader('RateLimit-Limit');
      headers['RateLimit-Remaining'] = refHeader('RateLimit-Remaining');
      headers['RateLimit-Reset'] = refHeader('RateLimit-Reset');
    }
    if (status === '4XX' || status === '5XX' || status === '429' || status === '503') {
      headers['Retry-After'] = refHeader('Retry-After');
    }
    if (operation.operationId === 'trackEvent' && status === '201') {
      headers['Idempotent-Replayed'] = refHeader('Idempotent-Replayed');
    }
    response.headers = { ...headers, ...response.headers };
  }
}

/** The last pass over the generated document: components, headers, optional defaulted parameters. */
export function finishDocument({ openapiObject }: { openapiObject: Json }): Json {
  const components = isObject(openapiObject.components) ? openapiObject.components : {};
  const schemas: Json = isObject(components.schemas) ? { ...components.schemas } : {};
  const paths = hoist(openapiObject.paths, schemas) as Record<string, Record<string, Operation>>;
  for (const [path, item] of Object.entries(paths)) {
    for (const operation of Object.values(item)) {
      // A parameter with a default is never required (`limit` defaults to 50).
      for (const parameter of operation.parameters ?? []) {
        if (parameter.schema?.default !== undefined) parameter.required = false;
      }
      addHeaders(path, operation);
    }
  }
  const sorted = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));
  return { ...openapiObject, paths, components: { ...components, schemas: sorted, headers: HEADERS } };
}

export const SWAGGER_OPTIONS: FastifyDynamicSwaggerOptions = {
  openapi: {
    openapi: '3.1.0',
    info: { title: 'Tally API', version: '1.0.0', description: 'What AI agents are worth.' },
    servers: [
      { url: 'http://127.0.0.1:8080', description: 'A local `tally serve` on the default host and port' },
    ],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'tally_live_… API key' } },
    },
    security: [{ bearer: [] }],
  },
  transformObject: (documentObject) =>
    'openapiObject' in documentObject
      ? (finishDocument(documentObject as unknown as { openapiObject: Json }) as never)
      : documentObject.swaggerObject,
};
