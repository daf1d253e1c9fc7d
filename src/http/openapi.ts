import { API_PREFIXES, scopeOf, type RouteSpec } from './routes.js';
import type { SchemaRegistry } from './validation.js';
import { EVENT_TYPES } from '../domain/webhook-events.js';

type Json = Record<string, unknown>;

/** Error responses every route of a kind can give; described once here, not per route. */
function standardErrors(spec: RouteSpec): Record<number, string> {
  const errors: Record<number, string> = {};
  if (spec.body || spec.query) errors[400] = 'Invalid JSON or a field failed validation; `details` names each field';
  if (spec.operator) errors[401] = 'Missing or wrong operator key';
  else if (!spec.public) errors[401] = 'Missing, unknown, revoked or expired API key';
  const scope = scopeOf(spec);
  if (scope && scope !== 'any') errors[403] = `The key lacks the "${scope}" scope, or its team is suspended (codes forbidden, team_suspended)`;
  else if (scope === 'any') errors[403] = "The key's team is suspended (code team_suspended)";
  if (spec.operator) errors[429] = 'The operator key is over its requests-a-second limit (code rate_limited); Retry-After says when to send again';
  else if (!spec.public) {
    errors[429] = spec.batchField
      ? "The key is over its records-a-second limit (code rate_limited); Retry-After says when to send again"
      : "The key is over its requests-a-second limit (code rate_limited); Retry-After says when to send again";
  }
  if (spec.path.includes(':') && !spec.neverNotFound) errors[404] = 'No such resource in the team of the key';
  if (spec.body) {
    errors[413] = 'Body larger than MAX_BODY_BYTES';
    errors[415] = 'Content-Type is not application/json';
  }
  return errors;
}

/** What a 429 carries (every answer of an authenticated route carries the two RateLimit fields). */
const RATE_LIMIT_HEADERS = {
  'Retry-After': { description: 'Seconds to wait before sending again', schema: { type: 'integer' } },
  'RateLimit-Policy': {
    description: 'The key\'s limit, as in draft-ietf-httpapi-ratelimit-headers: "records";q=<records a second>;w=1 on ingest, "requests";q=<requests a second>;w=1 elsewhere',
    schema: { type: 'string' },
  },
  RateLimit: {
    description: 'What is left: "<policy>";r=<tokens left>;t=<seconds until the bucket is full>',
    schema: { type: 'string' },
  },
};

const WEBHOOK_SUMMARIES: Record<(typeof EVENT_TYPES)[number], string> = {
  'alert.opened': 'An alert opened: the first occurrence of a breach',
  'alert.escalated': "An open alert's severity rose",
  'alert.resolved': 'An alert was resolved',
  'alert.reopened': 'A resolved alert was reopened',
  'authorization.pending': 'An authorization waits for a person: an approve policy would be broken (data: the authorization)',
  'authorization.decided': 'A pending authorization was approved or denied by a person, or its wait ran out (data: the authorization)',
  test: 'A test event (POST /webhooks/{id}/test)',
};

/** `/agents/:id` -> `/agents/{id}` */
export function openApiPath(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/**
 * Schema files reference each other by file name and themselves by `#/...`; in the document they
 * live under components, so both kinds of reference are rewritten to point there.
 */
function rewriteRefs(value: unknown, file: string): unknown {
  if (Array.isArray(value)) return value.map((v) => rewriteRefs(v, file));
  if (value && typeof value === 'object') {
    const out: Json = {};
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$id' || key === '$schema') continue;
      if (key === '$ref' && typeof inner === 'string') {
        const [target, pointer] = inner.split('#');
        out[key] = `#/components/schemas/${componentName(target || file)}${pointer ?? ''}`;
      } else {
        out[key] = rewriteRefs(inner, file);
      }
    }
    return out;
  }
  return value;
}

const componentName = (file: string): string => file.replace(/\.json$/, '');
const ref = (file: string) => ({ $ref: `#/components/schemas/${componentName(file)}` });

function operation(spec: RouteSpec, schemas: SchemaRegistry): Json {
  const parameters: Json[] = [];
  for (const match of spec.path.matchAll(/:([A-Za-z0-9_]+)/g)) {
    parameters.push({ name: match[1], in: 'path', required: true, schema: { type: 'string' } });
  }
  if (spec.query) {
    const query = schemas.schemas.get(spec.query) as { properties?: Json; required?: string[] };
    for (const [name, schema] of Object.entries(query.properties ?? {})) {
      const { description, ...rest } = schema as Json;
      parameters.push({
        name,
        in: 'query',
        required: query.required?.includes(name) ?? false,
        ...(description ? { description } : {}),
        schema: rewriteRefs(rest, spec.query),
      });
    }
  }
  const responses: Json = {};
  for (const [status, response] of Object.entries(spec.responses)) {
    responses[status] = {
      description: response.description,
      ...(response.schema
        ? {
            content: {
              'application/json': {
                schema: ref(response.schema),
                ...(response.example === undefined ? {} : { example: response.example }),
              },
            },
          }
        : {}),
    };
  }
  for (const [status, description] of Object.entries(standardErrors(spec))) {
    responses[status] ??= {
      description,
      ...(status === '429' ? { headers: RATE_LIMIT_HEADERS } : {}),
      content: { 'application/json': { schema: ref('error.json') } },
    };
  }
  return {
    operationId: spec.operationId,
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    tags: [spec.tag],
    // OpenAPI 3.1 lets a bearer requirement list the roles it needs: here, the key's scope.
    security: spec.public ? [] : spec.operator ? [{ operatorAuth: [] }] : [{ bearerAuth: scopeOf(spec) === 'any' ? [] : [scopeOf(spec)] }],
    ...(parameters.length ? { parameters } : {}),
    ...(spec.body
      ? {
          requestBody: {
            required: spec.bodyWhenEmpty === undefined,
            content: {
              'application/json': {
                schema: ref(spec.body),
                ...(spec.bodyExample === undefined ? {} : { example: spec.bodyExample }),
              },
            },
          },
        }
      : {}),
    responses,
  };
}

/** The OpenAPI 3.1 document of every mounted route, built from the route specs and schema/api. */
export function buildOpenApiDocument(routes: readonly RouteSpec[], schemas: SchemaRegistry, version: string): Json {
  const paths: Record<string, Json> = {};
  for (const spec of routes) {
    const path = openApiPath(spec.path);
    const item = (paths[path] ??= {});
    const prefixes = spec.prefixes ?? API_PREFIXES;
    // Paths are written relative to the servers; a route served elsewhere lists its own.
    if (prefixes.join() !== API_PREFIXES.join()) {
      item.servers = prefixes.map((p) => ({ url: p || '/' }));
    }
    item[spec.method] = operation(spec, schemas);
  }
  const all: Record<string, unknown> = {};
  for (const [file, schema] of schemas.schemas) all[componentName(file)] = rewriteRefs(schema, file);
  // Only the schemas the operations use: the others (query strings, written out as parameters;
  // audit-record, checked per record inside a batch) would be unused components.
  const components: Json = {};
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (!value || typeof value !== 'object') return;
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref' && typeof inner === 'string' && inner.startsWith('#/components/schemas/')) {
        const name = inner.slice('#/components/schemas/'.length).split('/')[0]!;
        if (!(name in components) && name in all) {
          components[name] = all[name];
          visit(all[name]);
        }
      } else visit(inner);
    }
  };
  // OpenAPI 3.1 describes what the service sends: each webhook event a receiver may get.
  const webhooks: Record<string, Json> = {};
  for (const type of EVENT_TYPES) {
    webhooks[type] = {
      post: {
        operationId: `webhook_${type.replace('.', '_')}`,
        summary: WEBHOOK_SUMMARIES[type],
        description:
          'Sent to each active standard endpoint that lists this type, signed as Standard Webhooks specifies: ' +
          'webhook-signature is v1, and the base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}" keyed with the bytes ' +
          'of the secret after whsec_. Answer 2xx within 10 s; anything else is retried. A slack endpoint gets a Slack message instead.',
        tags: ['webhooks'],
        security: [],
        parameters: [
          { name: 'webhook-id', in: 'header', required: true, schema: { type: 'string' }, description: 'The event id (evt_…)' },
          { name: 'webhook-timestamp', in: 'header', required: true, schema: { type: 'string' }, description: 'Unix seconds of this attempt' },
          { name: 'webhook-signature', in: 'header', required: true, schema: { type: 'string' }, description: 'v1,<base64>; two, space-separated, for 24 hours after a secret rotation' },
        ],
        requestBody: { required: true, content: { 'application/json': { schema: ref('webhook-event.json') } } },
        responses: { '200': { description: 'Received (any 2xx)' } },
      },
    };
  }
  visit(paths);
  visit(webhooks);
  return {
    openapi: '3.1.0',
    info: {
      title: 'spendscope',
      version,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
      description:
        'Spend control for software agents: audit-record ingest, budget policies, alerts and aggregated spend. ' +
        'Every route below is served under both /api/v1 and /v1.',
    },
    servers: API_PREFIXES.map((url) => ({ url })),
    security: [{ bearerAuth: [] }],
    paths,
    webhooks,
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'Authorization: Bearer <API key>. Each key has scopes: ingest (send records), read (every GET and the ' +
            "SDK's queries), admin (everything). Each operation lists the scope it needs; a key without it gets 403 forbidden. " +
            'The keys of a team the operator suspended get 403 team_suspended.',
        },
        operatorAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            "Authorization: Bearer <operator key>: the service owner's key (OPERATOR_API_KEY_FILE), for the operator routes only. " +
            'It reads no team\'s records and acts as no team; team keys are refused on these routes. Without an operator key ' +
            'configured, the operator routes answer 404.',
        },
      },
      schemas: components,
    },
  };
}
