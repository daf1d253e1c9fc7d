import type { WaitRouteDeps } from '../authorizations/routes.js';
import type { IngestRouteDeps } from '../ingest/routes.js';
import type { PolicyRouteDeps } from '../policies/revisions.js';
import type { WebhookRouteDeps } from '../webhooks/routes.js';

/** What the tools take: the deps of the routes they call. */
export type McpDeps = IngestRouteDeps & WebhookRouteDeps & PolicyRouteDeps & WaitRouteDeps;
