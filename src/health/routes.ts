import { errorBody } from '../http/errors.js';
import { definePublicRoute } from '../http/routes.js';
import { pingRegistry } from '../stores/sqlite.js';

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

export const health = definePublicRoute({
  method: 'get',
  path: '/healthz',
  public: true,
  prefixes: [''],
  operationId: 'health',
  summary: 'Liveness and readiness: both stores answer',
  tag: 'operations',
  responses: {
    200: {
      description: 'Both stores answer',
      schema: 'health.json',
      example: {
        status: 'ok',
        stores: { registry: 'ok', clickhouse: 'ok' },
        ingest: { backlogRows: 1800, backlogBytes: 1075000, oldestUnloadedAgeMs: 140, loader: 'ok' },
      },
    },
    503: { description: 'A store does not answer; `stores` says which', schema: 'health.json' },
  },
  async handler({ deps, requestId }) {
    const stores = { registry: 'ok', clickhouse: 'ok' };
    try {
      pingRegistry(deps.registry);
    } catch (err) {
      stores.registry = describe(err);
    }
    try {
      await withTimeout(deps.events.ping(), PING_TIMEOUT_MS);
    } catch (err) {
      stores.clickhouse = describe(err);
    }
    const backlog = deps.ingest.freshness.backlog();
    const ingest = {
      backlogRows: backlog.rows,
      backlogBytes: backlog.bytes,
      oldestUnloadedAgeMs: backlog.oldestCommittedAt === null ? null : Math.max(0, Date.now() - backlog.oldestCommittedAt),
      loader: deps.ingest.loader.isFailing ? 'failing' : 'ok',
    };
    const failed = Object.entries(stores).filter(([, state]) => state !== 'ok').map(([name]) => name);
    if (failed.length === 0) return { body: { status: 'ok', stores, ingest } };
    const error = errorBody('store_unavailable', `Store not answering: ${failed.join(', ')}`, requestId);
    return { status: 503, body: { status: 'unavailable', stores, ingest, ...error } };
  },
});

export const healthRoutes = [health];
