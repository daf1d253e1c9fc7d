import fs from 'node:fs';
import path from 'node:path';
import { buildOpenApiDocument } from '../http/openapi.js';
import { API_PREFIXES, definePublicRoute, type RouteSpec } from '../http/routes.js';
import { PROJECT_ROOT } from '../paths.js';

const VERSION = (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;

/** GET /openapi.json, built once from the routes it is given (the full list, itself included). */
export function openApiRoute(allRoutes: () => readonly RouteSpec[]): RouteSpec {
  let document: unknown;
  return definePublicRoute({
    method: 'get',
    path: '/openapi.json',
    public: true,
    // Public, at the site root too: tools and the /docs page read it without a key.
    prefixes: [...API_PREFIXES, ''],
    operationId: 'openApiDocument',
    summary: 'This API as an OpenAPI 3.1 document (no key needed)',
    description: 'Also at /openapi.json. A readable page of it is at /docs.',
    tag: 'docs',
    responses: { 200: { description: 'The OpenAPI document', schema: 'openapi-document.json' } },
    handler({ deps }) {
      document ??= buildOpenApiDocument(allRoutes(), deps.schemas, VERSION);
      return { body: document };
    },
  });
}
