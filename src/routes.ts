import { agentRoutes } from './agents/routes.js';
import { alertRoutes } from './alerts/routes.js';
import { analyticsRoutes } from './analytics/routes.js';
import { auditLogRoutes } from './audit-log/routes.js';
import { auditRoutes } from './audit/routes.js';
import { recordValuesRoute } from './audit/values-route.js';
import { authorizationRoutes } from './authorizations/routes.js';
import { budgetRoutes } from './budgets/routes.js';
import { openApiRoute } from './docs/routes.js';
import { healthRoutes } from './health/routes.js';
import type { RouteSpec } from './http/routes.js';
import { ingestRoutes } from './ingest/routes.js';
import { metricsRoute } from './metrics/routes.js';
import { operatorRoutes } from './operator/routes.js';
import { policyRoutes } from './policies/routes.js';
import { rateRoutes } from './rates/routes.js';
import { settlementRoutes } from './settlements/routes.js';
import { teamRoutes } from './teams/routes.js';
import { webhookRoutes } from './webhooks/routes.js';

/** Every route of the service; app.ts mounts exactly these and the OpenAPI document lists them. */
export const ROUTES: readonly RouteSpec[] = [
  ...healthRoutes,
  metricsRoute,
  ...teamRoutes,
  ...ingestRoutes,
  ...authorizationRoutes,
  ...auditRoutes,
  recordValuesRoute,
  ...agentRoutes,
  ...policyRoutes,
  ...budgetRoutes,
  ...rateRoutes,
  ...alertRoutes,
  ...settlementRoutes,
  ...analyticsRoutes,
  ...auditLogRoutes,
  ...webhookRoutes,
  ...operatorRoutes,
  openApiRoute(() => ROUTES),
];
