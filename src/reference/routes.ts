import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { setSecurityHeaders } from '../dashboard/security.js';

/**
 * A browsable API reference of /openapi.json at /reference: Swagger UI from the npm package
 * swagger-ui-dist, served by Tally itself under the dashboard's Content-Security-Policy. Of the
 * renderers tried (Scalar, Redoc, RapiDoc, Swagger UI) only Swagger UI runs under
 * `style-src 'self'`: it ships its styles as a CSS file and sets no inline style.
 */
export const REFERENCE_PATH = '/reference';

/** Our files, beside this module under tsx; read from src/ of the same checkout once built. */
function ownDirectory(): string {
  const here = fileURLToPath(new URL('./assets/', import.meta.url));
  if (existsSync(here)) return here;
  return fileURLToPath(new URL('../../src/reference/assets/', import.meta.url));
}

const swaggerUiDirectory = () =>
  dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

const FILES: Record<string, { type: string; path: () => string }> = {
  'swagger-ui.css': {
    type: 'text/css; charset=utf-8',
    path: () => join(swaggerUiDirectory(), 'swagger-ui.css'),
  },
  'swagger-ui-bundle.js': {
    type: 'text/javascript; charset=utf-8',
    path: () => join(swaggerUiDirectory(), 'swagger-ui-bundle.js'),
  },
  'reference.css': { type: 'text/css; charset=utf-8', path: () => join(ownDirectory(), 'reference.css') },
  'reference.js': {
    type: 'text/javascript; charset=utf-8',
    path: () => join(ownDirectory(), 'reference.js'),
  },
};

// Read on first request, then kept: the bundle is 1.7 MB, which a process that never shows the
// reference (a worker, most test apps) need not hold.
const loaded = new Map<string, Buffer>();

function asset(name: string): { type: string; body: Buffer } | null {
  const file = FILES[name];
  if (!file) return null;
  let body = loaded.get(name);
  if (!body) {
    body = readFileSync(file.path());
    loaded.set(name, body);
  }
  return { type: file.type, body };
}

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>API reference · Tally</title>
    <link rel="icon" href="/dashboard/assets/favicon.svg" type="image/svg+xml" />
    <link rel="stylesheet" href="${REFERENCE_PATH}/assets/swagger-ui.css" />
    <link rel="stylesheet" href="${REFERENCE_PATH}/assets/reference.css" />
    <script src="${REFERENCE_PATH}/assets/swagger-ui-bundle.js" defer></script>
    <script src="${REFERENCE_PATH}/assets/reference.js" defer></script>
  </head>
  <body>
    <header class="reference-top">
      <a class="brand" href="${REFERENCE_PATH}">Tally API reference</a>
      <nav aria-label="Reference">
        <ul>
          <li><a href="/openapi.json">openapi.json</a></li>
          <li><a href="/dashboard">Dashboard</a></li>
        </ul>
      </nav>
    </header>
    <main id="reference" aria-busy="true">
      <p>Loading the API description…</p>
      <noscript><p>The reference needs JavaScript; the description itself is at <a href="/openapi.json">/openapi.json</a>.</p></noscript>
    </main>
  </body>
</html>
`;

export function registerReference(app: FastifyInstance): void {
  const hidden = { schema: { hide: true } };
  app.get(REFERENCE_PATH, hidden, async (_request, reply) => {
    setSecurityHeaders(reply);
    return reply.type('text/html; charset=utf-8').send(PAGE);
  });
  app.get<{ Params: { name: string } }>(`${REFERENCE_PATH}/assets/:name`, hidden, async (request, reply) => {
    setSecurityHeaders(reply);
    const found = asset(request.params.name);
    if (!found) return reply.code(404).type('text/plain; charset=utf-8').send('Not found');
    return reply.header('Cache-Control', 'public, max-age=300').type(found.type).send(found.body);
  });
}
