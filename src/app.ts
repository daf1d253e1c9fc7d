import express, { type Express } from 'express';
import { dashboardPage } from './dashboard/page.js';
import { docsPage } from './docs/page.js';
import { cors } from './http/cors.js';
import { errorHandler, notFound } from './http/errors.js';
import { requestLogger } from './http/logging.js';
import { mountRoutes, type AppDeps, type MountOptions, type RouteSpec } from './http/routes.js';
import { mountMcp } from './mcp/server.js';
import { countRequests } from './metrics/routes.js';
import { ROUTES } from './routes.js';

/**
 * The express application. Order matters: the request log wraps everything (so even a 404 has a
 * request id), routes come next, and the error handler is last so every failure has one shape.
 */
export function createApp(deps: AppDeps, options: MountOptions = {}, routes: readonly RouteSpec[] = ROUTES): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  // No hash of every JSON answer: API answers are not cached by validators, and the dashboard's
  // assets carry their own ETag.
  app.set('etag', false);
  app.use(requestLogger(deps.logger));
  app.use(countRequests(deps.metrics));
  // ClickHouse's protocol, not the API's: its own credentials, answers and errors (src/clickhouse-http).
  if (deps.clickhouseHttp) app.use('/clickhouse', deps.clickhouseHttp);
  app.use(cors(deps.config.corsOrigins));
  app.use(docsPage());
  app.use(dashboardPage());
  mountRoutes(app, routes, deps, options);
  // The Model Context Protocol: the same routes as tools, behind the same keys and limits.
  mountMcp(app, deps, options);
  app.use(notFound);
  app.use(errorHandler(deps.config.maxBodyBytes));
  return app;
}
