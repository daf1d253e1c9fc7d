import fs from 'node:fs';
import path from 'node:path';
import { buildOpenApiDocument } from '../http/openapi.js';
import { defineRoute, type RouteSpec } from '../http/routes.js';
import { PROJECT_ROOT } from '../paths.js';

const VERSION = (JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;

/** GET /openapi.json, built once from the routes it is given (the full list, itself included). */
export function openApiRoute(allRoutes: () => readonly RouteSpec[]): RouteSpec {
  let document: unknown;
  return defineRoute({
    method: 'get',
    path: '/openapi.json',
    operationId: 'openApiDocument',
    summary: 'This API as an OpenAPI 3.1 document',
    tag: 'docs',
    responses: { 200: { description: 'The OpenAPI document', schema: 'openapi-document.json' } },
    handler({ deps }) {
      document ??= buildOpenApiDocument(allRoutes(), deps.schemas, VERSION);
      return { body: document };
    },
  });
}
