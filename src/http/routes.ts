import type { IncomingMessage } from 'node:http';
import express, { type Express, type Request, type RequestHandler, type Response } from 'express';
import typeis from 'type-is';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics/metrics.js';
import type { EventStore } from '../stores/clickhouse.js';
import type { SecretBox } from '../stores/secrets.js';
import type { Database } from '../stores/sql.js';
import type { KeyOwner, Scope } from '../domain/keys.js';
import type { TimeWindow } from '../domain/windows.js';
import { limitOperatorRequests, limitRecords, limitRequests, precheckRecords } from '../limits/http.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import { authenticate, requireScope, type KeyDirectory } from './auth.js';
import { authenticateOperator } from './operator-auth.js';
import { checkBodyShape, hasNul, isPlainBody, NUL_REFUSED, scanBodyShape } from './body-shape.js';
import { ApiError, allowedMethods, methodNotAllowed } from './errors.js';
import { sendJson, sendText, setHeaders } from './respond.js';
import { isFixedPath, type FastLane } from './fast-lane.js';
import type { SchemaRegistry } from './validation.js';

/**
 * What every handler may use: the stores, the config, the compiled schemas, the shared limits.
 * A feature that needs more of the service (the write path, the webhook dispatcher) says so in
 * its own deps type, extending this one; the composition root (src/deps.ts) provides them all.
 */
export interface RouteDeps {
  config: Config;
  /**
   * The registry's tables through src/stores/sql.ts: the SQLite file of one instance, or
   * PostgreSQL shared by several (DATABASE_URL).
   */
  db: Database;
  /** The read session of the event store (health checks; reads of events go through readEvents). */
  events: EventStore;
  schemas: SchemaRegistry;
  logger: Logger;
  /**
   * The event store for a read of a team's events, once it holds every record the team had
   * acknowledged when the read began (503 when the loader cannot get there in time).
   */
  readEvents(teamId: string): Promise<EventStore>;
  /**
   * readEvents for a read that counts only records of event times in `times`: it waits only while
   * such records are unloaded, and says how long it waited (analytics answer it in Server-Timing).
   */
  readEventsIn(teamId: string, times: TimeWindow): Promise<{ events: EventStore; waitedMs: number }>;
  /** Prometheus series (GET /metrics). */
  metrics: Metrics;
  /** Seals and opens the secrets the registry holds (webhook URLs and signing secrets). */
  secrets: SecretBox;
  /** Where presented keys are looked up (the teams feature's store). */
  keys: KeyDirectory;
  /**
   * The rate buckets of key holders: one instance, built by the composition root, shared by the
   * routes and the BI interface, so neither is a way around the other's count.
   */
  rateLimiter: RateLimiter;
}

/** Where the API is served: the interface shows both forms and does not say which one. */
export const API_PREFIXES = ['/api/v1', '/v1'] as const;

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface PublicContext<Body, Query, D extends RouteDeps = RouteDeps> {
  body: Body;
  query: Query;
  params: Record<string, string>;
  deps: D;
  requestId: string;
  log: Logger;
  /** The route being served: method and pattern (`PATCH`, `/policies/:id`), for the audit log. */
  method: string;
  route: string;
  /**
   * The JSON body scanned plain (body-shape.ts, ScanFacts): no string of it holds an escape or a
   * reserved key, so an ingest route's records need no per-record walk for them. Absent: unknown.
   */
  plainBody?: boolean;
}

export interface AuthedContext<Body, Query, D extends RouteDeps = RouteDeps> extends PublicContext<Body, Query, D> {
  /** The team of the API key: every read and write is scoped by it. */
  team: KeyOwner;
}

export interface RouteResult {
  status?: number;
  body: unknown;
  /** A text answer instead of JSON (body is then what the schema check sees). */
  text?: { contentType: string; content: string };
  headers?: Record<string, string>;
}

export interface ResponseSpec {
  description: string;
  /** File name of the body's schema in schema/api. */
  schema?: string;
  example?: unknown;
}

interface RouteSpecBase {
  method: HttpMethod;
  /** Express path below each prefix, e.g. `/agents/:id`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** Prefixes the route is served under; the API prefixes unless said otherwise. */
  prefixes?: readonly string[];
  /** Schema file of the JSON body; declaring one makes the route accept only JSON. */
  body?: string;
  bodyExample?: unknown;
  /**
   * What the handler sees when a request of this route sends no body at all (no Content-Type, no
   * bytes); without it, such a request is a 400 "Request body is required".
   */
  bodyWhenEmpty?: unknown;
  /** Schema file of the query string. */
  query?: string;
  responses: Record<number, ResponseSpec>;
  /** A route with a path parameter that answers an unknown one without a 404 (the SDK's GET /audit/:id). */
  neverNotFound?: true;
}

export interface AuthedRouteSpec<Body = unknown, Query = unknown, D extends RouteDeps = RouteDeps> extends RouteSpecBase {
  public?: false;
  operator?: false;
  /** The scope a key needs: by default `read` for GET and `admin` for changes; `any`: every key. */
  scope?: Scope | 'any';
  /**
   * An ingest route: the body field holding its records. Each record costs a token of the key's
   * records bucket (other routes cost one token of its requests bucket), and each is checked on
   * its own, so one bad record does not refuse the batch.
   */
  batchField?: string;
  handler: (ctx: AuthedContext<Body, Query, D>) => Promise<RouteResult> | RouteResult;
}

export interface PublicRouteSpec<Body = unknown, Query = unknown, D extends RouteDeps = RouteDeps> extends RouteSpecBase {
  public: true;
  operator?: false;
  handler: (ctx: PublicContext<Body, Query, D>) => Promise<RouteResult> | RouteResult;
}

/**
 * A route of the service's operator (OPERATOR_API_KEY_FILE), apart from every team: its handler
 * sees no team. Not mounted, so a 404 like any unknown path, when no operator key is configured.
 */
export interface OperatorRouteSpec<Body = unknown, Query = unknown> extends RouteSpecBase {
  public?: false;
  operator: true;
  handler: (ctx: PublicContext<Body, Query>) => Promise<RouteResult> | RouteResult;
}

// Each route's deps type is the feature's; the composition root's deps hold them all (src/deps.ts checks it).
export type RouteSpec = AuthedRouteSpec<any, any, any> | PublicRouteSpec<any, any, any> | OperatorRouteSpec<any, any>;

/** Declares a route that needs an API key; the handler sees the key's team. */
export function defineRoute<Body = unknown, Query = unknown, D extends RouteDeps = RouteDeps>(spec: AuthedRouteSpec<Body, Query, D>): RouteSpec {
  return spec;
}

/** Declares a route of the operator key. */
export function defineOperatorRoute<Body = unknown, Query = unknown>(spec: Omit<OperatorRouteSpec<Body, Query>, 'operator'>): RouteSpec {
  return { ...spec, operator: true };
}

/** Declares a route anyone may call (health). */
export function definePublicRoute<Body = unknown, Query = unknown, D extends RouteDeps = RouteDeps>(spec: PublicRouteSpec<Body, Query, D>): RouteSpec {
  return spec;
}

export interface MountOptions {
  /** Check each response against its declared schema (tests): a mismatch is a 500. */
  validateResponses?: boolean;
}

/**
 * Mounts every route under each of its prefixes. Routes sharing a path share one express route,
 * whose fallback answers 405 with the methods it has. A route with a fixed path is also given to
 * `lane`, which serves exact matches of it without express (fast-lane.ts).
 */
export function mountRoutes(app: Express, routes: readonly RouteSpec[], deps: RouteDeps, options: MountOptions = {}, lane?: FastLane): void {
  const byPath = new Map<string, RouteSpec[]>();
  for (const spec of routes) {
    const key = `${(spec.prefixes ?? API_PREFIXES).join(',')} ${spec.path}`;
    byPath.set(key, [...(byPath.get(key) ?? []), spec]);
  }
  const auth = authenticate(deps.keys);
  const limiter = deps.rateLimiter;
  // The raw bytes are scanned for the shape limits before JSON.parse builds anything (body-shape.ts).
  const json = express.json({ limit: deps.config.maxBodyBytes, type: (req) => jsonBody(req) === true, verify: scanBodyShape });
  const operatorKey = deps.config.operatorKeyHash;
  const operatorAuth = operatorKey && authenticateOperator(operatorKey);
  for (const specs of byPath.values()) {
    const first = specs[0]!;
    if (first.operator && !operatorAuth) continue;
    for (const prefix of first.prefixes ?? API_PREFIXES) {
      const route = app.route(prefix + first.path);
      for (const spec of specs) {
        // Limits come right after the key is known, so every answer of a limited route (a 403 or
        // a 400 too) carries its RateLimit headers; a batch is counted once its body is parsed.
        const chain: RequestHandler[] = [];
        if (spec.operator) chain.push(operatorAuth!, limitOperatorRequests(limiter, deps.metrics));
        else if (!spec.public) {
          chain.push(auth);
          chain.push(spec.batchField ? precheckRecords(limiter, deps.metrics) : limitRequests(limiter, deps.metrics));
          chain.push(requireScope(scopeOf(spec)!));
        }
        if (spec.body) chain.push(requireJson(spec), json, checkBodyShape(spec.public || spec.operator ? undefined : spec.batchField));
        if (!spec.public && !spec.operator && spec.batchField) chain.push(limitRecords(limiter, deps.metrics, spec.batchField));
        chain.push(runHandler(spec, deps, options));
        route[spec.method](...chain);
        if (isFixedPath(first.path)) lane?.add(spec.method, prefix + first.path, chain);
      }
      // OPTIONS (a browser's CORS preflight among them) needs no key and is never a 405.
      route.options(allowedMethods(specs.map((s) => s.method)));
      route.all(methodNotAllowed(specs.map((s) => s.method)));
    }
  }
}

/** The scope a route needs. */
export function scopeOf(spec: RouteSpec): Scope | 'any' | undefined {
  if (spec.public || spec.operator) return undefined;
  return spec.scope ?? (spec.method === 'get' ? 'read' : 'admin');
}

const JSON_TYPES = ['application/json', 'application/*+json'];

/** Content-Type headers already read: whether each is JSON. Bounded: a client may send any number of them. */
const jsonTypes = new Map<string, boolean>();

/**
 * Whether the request's body is JSON, as type-is tells it (null: the request has no body). Every
 * request with a body asked this twice (here and in the JSON parser), parsing its Content-Type
 * each time; the header is nearly always one of a few strings, so the answer is kept per string.
 */
function jsonBody(req: IncomingMessage): boolean | null {
  if (!typeis.hasBody(req)) return null;
  const header = req.headers['content-type'];
  if (!header) return false;
  let json = jsonTypes.get(header);
  if (json === undefined) {
    if (jsonTypes.size >= 256) jsonTypes.clear();
    jsonTypes.set(header, (json = typeis.is(header, JSON_TYPES) !== false));
  }
  return json;
}

/**
 * A body of another type gets 415; no body at all (or an empty one) is a 400 "is required", unless
 * the route says what an empty request means (`bodyWhenEmpty`).
 */
function requireJson(spec: RouteSpec): RequestHandler {
  return (req, _res, next) => {
    const type = jsonBody(req);
    const empty = req.headers['content-length'] === '0' || type === null;
    if (empty && !req.headers['content-type']) {
      if (spec.bodyWhenEmpty === undefined) {
        throw new ApiError('validation_failed', 'Request body is required', [{ field: 'body', message: 'is required' }]);
      }
      req.body = structuredClone(spec.bodyWhenEmpty);
      next();
      return;
    }
    if (type === false) {
      throw new ApiError(
        'unsupported_media_type',
        `Content-Type must be application/json, got ${req.headers['content-type'] ?? 'none'}`,
      );
    }
    next();
  };
}

/** A path or query parameter holding NUL, which no store keeps (NUL_REFUSED), named as a field. */
function nulParameter(req: Request): string | undefined {
  for (const [name, value] of Object.entries(req.params)) if (hasNul(value)) return name;
  for (const [name, value] of Object.entries(req.query)) if (hasNul(value) || (Array.isArray(value) && value.some(hasNul))) return name;
  return undefined;
}

function runHandler(spec: RouteSpec, deps: RouteDeps, options: MountOptions): RequestHandler {
  return async (req: Request, res: Response) => {
    const requestId = String(req.id);
    const nul = nulParameter(req);
    if (nul) throw new ApiError('validation_failed', `${nul} ${NUL_REFUSED}`, [{ field: nul, message: NUL_REFUSED }]);
    const ctx: AuthedContext<unknown, unknown> = {
      body: spec.body ? deps.schemas.body(spec.body, req.body) : undefined,
      query: spec.query ? deps.schemas.query(spec.query, req.query as Record<string, unknown>) : {},
      params: req.params as Record<string, string>,
      deps,
      requestId,
      log: req.log,
      method: spec.method.toUpperCase(),
      route: spec.path,
      team: res.locals.team as KeyOwner,
      plainBody: isPlainBody(req),
    };
    const result = await (spec.handler as (c: typeof ctx) => Promise<RouteResult> | RouteResult)(ctx);
    const status = result.status ?? 200;
    if (options.validateResponses) assertDeclaredResponse(spec, status, result.body, deps.schemas);
    if (result.headers) setHeaders(res, result.headers);
    if (result.text) sendText(res, status, result.text.contentType, result.text.content);
    else sendJson(res, status, result.body);
  };
}

/** Throws when a handler answered a status it does not declare, or a body its schema refuses (tests). */
export function assertDeclaredResponse(spec: RouteSpec, status: number, body: unknown, schemas: SchemaRegistry): void {
  const declared = spec.responses[status];
  if (!declared) throw new Error(`${spec.operationId} answered ${status}, which it does not declare`);
  if (!declared.schema) return;
  const problems = schemas.problems(declared.schema, body);
  if (problems.length > 0) {
    throw new Error(`${spec.operationId} ${status} body does not match ${declared.schema}: ${JSON.stringify(problems)}`);
  }
}
