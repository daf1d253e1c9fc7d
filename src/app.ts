import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Express } from 'express';
import { dashboardPage } from './dashboard/page.js';
import { docsPage } from './docs/page.js';
import { cors } from './http/cors.js';
import { errorHandler, notFound } from './http/errors.js';
import { FastLane } from './http/fast-lane.js';
import { requestLogger } from './http/logging.js';
import type { AppDeps } from './deps.js';
import { mountRoutes, type MountOptions, type RouteSpec } from './http/routes.js';
import { mountMcp } from './mcp/server.js';
import { countRequests } from './metrics/routes.js';
import { ROUTES } from './routes.js';

/** What serves every request: a server's request listener (supertest takes it as it is), with the express app behind the lane. */
export type App = ((req: IncomingMessage, res: ServerResponse) => void) & { readonly express: Express };

/**
 * The service's two routers. The fast lane (src/http/fast-lane.ts) looks first: it serves the
 * routes with a fixed path (an authorization, an ingest batch) with the same request log,
 * metrics, CORS, middleware and error handler, without express's own cost. Everything else goes
 * to express, in which order matters: the request log wraps everything (so even a 404 has a
 * request id), routes come next, and the error handler is last so every failure has one shape.
 */
export function createApp(deps: AppDeps, options: MountOptions = {}, routes: readonly RouteSpec[] = ROUTES): App {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  // No hash of every JSON answer: API answers are not cached by validators, and the dashboard's
  // assets carry their own ETag.
  app.set('etag', false);
  const log = requestLogger(deps.logger);
  const count = countRequests(deps.metrics);
  const allowOrigins = cors(deps.config.corsOrigins);
  const onError = errorHandler(deps.config.maxBodyBytes);
  app.use(log);
  app.use(count);
  // ClickHouse's protocol, not the API's: its own credentials, answers and errors (src/clickhouse-http).
  if (deps.clickhouseHttp) app.use('/clickhouse', deps.clickhouseHttp);
  app.use(allowOrigins);
  app.use(docsPage());
  app.use(dashboardPage());
  const lane = new FastLane([log, count, allowOrigins], onError);
  mountRoutes(app, routes, deps, options, lane);
  // The Model Context Protocol: the same routes as tools, behind the same keys and limits.
  mountMcp(app, deps, options);
  app.use(notFound);
  app.use(onError);
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    if (!lane.serve(req, res)) app(req, res);
  };
  return Object.assign(listener, { express: app });
}
