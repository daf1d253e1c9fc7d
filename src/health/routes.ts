import { errorBody } from '../http/errors.js';
import { definePublicRoute } from '../http/routes.js';
import type { IngestRouteDeps } from '../ingest/routes.js';
import { readiness } from './readiness.js';

/** A store that takes longer than this to answer SELECT 1 counts as down for a load balancer. */
const PING_TIMEOUT_MS = 2000;

async function withTimeout(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const describe = (err: unknown) => `failed: ${err instanceof Error ? err.message : String(err)}`.slice(0, 300);

/** The liveness answer: the process runs and its event loop turns. Touches no store. */
const alive = () => ({ status: 'ok', uptimeSeconds: Math.floor(process.uptime()) });

const LIVE_DESCRIPTION =
  'Always 200 while the process runs and its event loop answers; touches no store, so a store outage, a full ' +
  'backlog or a full disk never fails it (restarting would not fix those). For a liveness probe (Kubernetes ' +
  '`livenessProbe`, Docker HEALTHCHECK): only a process that stopped answering should be restarted.';

export const liveness = definePublicRoute({
  method: 'get',
  path: '/livez',
  prefixes: [''],
  public: true,
  operationId: 'liveness',
  summary: 'Liveness: the process answers (no store touched)',
  description: LIVE_DESCRIPTION,
  tag: 'operations',
  responses: { 200: { description: 'The process runs', schema: 'liveness.json', example: { status: 'ok', uptimeSeconds: 3605 } } },
  handler: () => ({ body: alive() }),
});

export const health = definePublicRoute<unknown, { live?: string }, IngestRouteDeps>({
  method: 'get',
  path: '/healthz',
  public: true,
  prefixes: [''],
  operationId: 'health',
  summary: 'Readiness: this instance can acknowledge ingest',
  description:
    'For a readiness probe or a load balancer\'s health check. 503 (the error shape beside the usual fields, ' +
    '`error.details` naming each reason) when this instance cannot acknowledge a batch: the registry (SQLite or ' +
    'PostgreSQL) does not answer, the loader\'s backlog is at its bound (`INGEST_BACKLOG_MAX_*`: ingest answers 503 until ClickHouse ' +
    'catches up), the last write to the ingest log failed and none has succeeded since (disk full, I/O error; for ' +
    'at most 30 s when no write comes to prove it either way), or the service is shutting down. A failing loader, ' +
    'or ClickHouse not answering, with the backlog under its bound is still ready: records are acknowledged and ' +
    'wait in the ingest log (`ingest.loader: "failing"`, `stores.clickhouse` saying what failed); reads answer 503 ' +
    'meanwhile. ' +
    'With `?live` (any value) it answers as GET /livez instead.',
  tag: 'operations',
  query: 'health-query.json',
  responses: {
    200: {
      description: 'Ready: ingest is acknowledged (or, with ?live, the liveness answer); `stores` says whether each store answers',
      schema: 'health.json',
      example: {
        status: 'ok',
        stores: { registry: 'ok', clickhouse: 'ok' },
        ingest: {
          backlogRows: 1800,
          backlogBytes: 1075000,
          backlogMaxRows: 3000000,
          backlogMaxBytes: 2147483648,
          oldestUnloadedAgeMs: 140,
          loader: 'ok',
          log: 'ok',
          logFailedAgoMs: null,
        },
      },
    },
    503: {
      description: 'Not ready: `error.details` lists each reason, the field naming where the body shows it',
      schema: 'health.json',
      example: {
        status: 'unavailable',
        stores: { registry: 'ok', clickhouse: 'ok' },
        ingest: {
          backlogRows: 3000000,
          backlogBytes: 1790000000,
          backlogMaxRows: 3000000,
          backlogMaxBytes: 2147483648,
          oldestUnloadedAgeMs: 64200,
          loader: 'failing',
          log: 'ok',
          logFailedAgoMs: null,
        },
        error: {
          code: 'store_unavailable',
          message:
            'Not ready: ingest.backlogRows: 3000000 records are not yet in ClickHouse, at the bound of 3000000 (INGEST_BACKLOG_MAX_ROWS): ingest answers 503 until the loader catches up',
          details: [
            {
              field: 'ingest.backlogRows',
              message: '3000000 records are not yet in ClickHouse, at the bound of 3000000 (INGEST_BACKLOG_MAX_ROWS): ingest answers 503 until the loader catches up',
            },
          ],
          requestId: '5d0c5a1e-8f0e-4b7c-9a57-0b5e2f8d9c11',
        },
      },
    },
  },
  async handler({ deps, requestId, query }) {
    if (query.live !== undefined) return { body: alive() };
    const stores = { registry: 'ok', clickhouse: 'ok' };
    try {
      await withTimeout(deps.db.get('SELECT 1'), PING_TIMEOUT_MS);
    } catch (err) {
      stores.registry = describe(err);
    }
    try {
      await withTimeout(deps.events.ping(), PING_TIMEOUT_MS);
    } catch (err) {
      stores.clickhouse = describe(err);
    }
    const { commit, freshness, loader } = deps.ingest;
    const { reasons, ingest } = readiness({
      stores,
      backlog: freshness.backlog(),
      limits: commit.limits,
      loaderFailing: loader.isFailing,
      logFailure: commit.lastWriteFailure,
      closed: commit.isClosed,
      now: Date.now(),
    });
    if (reasons.length === 0) return { body: { status: 'ok', stores, ingest } };
    const message = `Not ready: ${reasons.map((r) => `${r.field}: ${r.message}`).join('; ')}`;
    return { status: 503, body: { status: 'unavailable', stores, ingest, ...errorBody('store_unavailable', message, requestId, reasons) } };
  },
});

export const healthRoutes = [liveness, health];
