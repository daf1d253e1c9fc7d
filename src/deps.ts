import type { Logger } from 'pino';
import { teamScopedInterface } from './clickhouse-http/interface.js';
import type { Config } from './config.js';
import type { RouteDeps } from './http/routes.js';
import type { ClickHouseHttpHandler } from './clickhouse-http/interface.js';
import type { IngestPath } from './ingest/pipeline.js';
import type { IngestRouteDeps } from './ingest/routes.js';
import type { WebhookRouteDeps } from './webhooks/routes.js';
import { PolicyRevisions, type PolicyRouteDeps } from './policies/revisions.js';
import { keyDirectory } from './teams/repository.js';
import type { EventStore } from './stores/clickhouse.js';
import type { SchemaRegistry } from './http/validation.js';
import { freshReads, freshReadsIn } from './ingest/freshness.js';
import { startIngestPipeline, startSharedIngestPipeline } from './ingest/pipeline.js';
import { RateLimiter, sharedRateLedger } from './limits/rate-limiter.js';
import { Metrics } from './metrics/metrics.js';
import type { SharedStores, Stores } from './stores/open.js';
import { openSecretBox } from './stores/secrets.js';
import { sqliteDatabase } from './stores/sql.js';
import { Dispatcher, type DispatcherOptions } from './webhooks/dispatcher.js';
import { resealEndpointSecrets } from './webhooks/repository.js';
import { startThresholdSweep } from './alerts/window-end.js';
import { DecisionWaiters, startApprovalSweep } from './authorizations/approvals.js';
import type { WaitRouteDeps } from './authorizations/routes.js';
import { RateBooks } from './rates/books.js';
import { AdvisoryLeases, soleLeases } from './settlements/leases.js';
import { Reconciler } from './settlements/reconciler.js';

/** Every part of the service, as the composition root builds it: what each feature's routes take, and more. */
export interface AppDeps extends RouteDeps, IngestRouteDeps, WebhookRouteDeps, PolicyRouteDeps, WaitRouteDeps {
  /** The loader's session; closed at shutdown. */
  loaderEvents: EventStore;
  /** The write path: log, group commit, loader; closed at shutdown before the stores. */
  ingest: IngestPath;
  /** Resolves threshold alerts whose window ended (src/alerts/window-end.ts). */
  thresholdSweep?: { close(): Promise<void> };
  /** Writes approval waits that ran out as declined, and wakes waiters on other instances' decisions (src/authorizations/approvals.ts). */
  approvalSweep?: { close(): Promise<void> };
  /** ClickHouse's HTTP interface for BI tools (embedded engine only), served under /clickhouse. */
  clickhouseHttp?: ClickHouseHttpHandler;
  /** Each team's currency and rates in memory, that value records at acknowledgement; closed at shutdown. */
  rates: RateBooks;
  /** Checks records against the chain (CHAIN_RPC_URLS); undefined when no chain is configured. */
  reconciler?: Reconciler;
}

/**
 * The service's parts, assembled once from its opened stores, on either registry: main.ts serves
 * them, and the tests build the very same on SQLite and on PostgreSQL (one assembly, so the two
 * cannot differ in what they start). The webhook dispatcher is started.
 */
export async function assembleDeps(
  config: Config,
  stores: Stores | SharedStores,
  schemas: SchemaRegistry,
  logger: Logger,
  dispatcher: Partial<DispatcherOptions> = {},
): Promise<AppDeps> {
  const { events, loaderEvents } = stores;
  const db = 'registry' in stores ? sqliteDatabase(stores.registry) : stores.db;
  // SQLite: no key given, so one is generated into the data directory (one instance reads it).
  const secrets = openSecretBox(config.secretsKeys, config.dataDir);
  const resealed = await resealEndpointSecrets(db, secrets);
  if (resealed) logger.info({ resealed, keyId: secrets.currentKeyId }, 'webhook secrets encrypted under the current key');
  const metrics = new Metrics();
  // The routes that change policies or agents raise it; the evaluator reloads a team's policies then.
  const policyRevisions = new PolicyRevisions();
  // Changes on this instance reach it as they commit; with PostgreSQL, other instances' by NOTIFY.
  const rates = new RateBooks(db, { pool: 'pool' in stores ? stores.pool : undefined, logger });
  rates.start();
  const ingest =
    'registry' in stores
      ? startIngestPipeline({ config, registry: stores.registry, events, loaderEvents, schemas, logger, metrics, policyRevisions, rates })
      : await startSharedIngestPipeline({ config, pool: stores.pool, db, events, loaderEvents, schemas, logger, metrics, policyRevisions, rates });
  const readEvents = freshReads(events, ingest.freshness, config.ingest.readWaitMs);
  const readEventsIn = freshReadsIn(events, ingest.freshness, config.ingest.readWaitMs);
  const webhooks = new Dispatcher(db, secrets, config.webhooks, logger, { publicUrl: config.publicUrl, ...dispatcher });
  webhooks.start();
  const thresholdSweep = startThresholdSweep(db, logger);
  const decisionWaiters = new DecisionWaiters(db);
  const approvalSweep = startApprovalSweep(db, logger, decisionWaiters, 'pool' in stores ? stores.pool : undefined);
  // One limiter for the API and the BI interface: a holder's buckets are the same whichever it uses.
  // With PostgreSQL, instances lease from buckets they share: a key's rate holds across them.
  const rateLimiter = new RateLimiter(config.rateLimits, Date.now, db.dialect === 'postgres' ? sharedRateLedger(db) : undefined, logger);
  const clickhouseHttp = teamScopedInterface({ config, db, events, rateLimiter });
  const keys = keyDirectory(db);
  const reconciler = config.chains && new Reconciler({
    chains: config.chains,
    assetDecimals: config.ingest.assetDecimals,
    db,
    events,
    rates,
    policyRevisions,
    leases: 'pool' in stores ? new AdvisoryLeases(stores.pool, logger) : soleLeases,
    logger,
    metrics,
    loadFrontier: async (now) => ingest.freshness.loadFrontier(now),
  });
  reconciler?.start();
  return { config, db, events, loaderEvents, logger, schemas, ingest, readEvents, readEventsIn, metrics, secrets, keys, policyRevisions, decisionWaiters, webhooks, thresholdSweep, approvalSweep, clickhouseHttp, rateLimiter, rates, reconciler };
}

/**
 * Closes what assembleDeps started and the stores under it, in the order that loses nothing:
 * webhook attempts in flight finish (or are sent again at the next start), then the ingest path
 * (every answered request's rows are in the log already; what the loader has not copied stays
 * there), then the stores.
 */
export async function closeDeps(deps: Pick<AppDeps, 'webhooks' | 'thresholdSweep' | 'approvalSweep' | 'ingest' | 'db' | 'events' | 'loaderEvents'> & { rates?: RateBooks; reconciler?: Reconciler }): Promise<void> {
  await deps.reconciler?.close();
  await deps.thresholdSweep?.close();
  await deps.approvalSweep?.close();
  await deps.webhooks.close();
  await deps.ingest.close();
  await deps.rates?.close();
  await deps.db.close();
  await deps.events.close();
  await deps.loaderEvents.close();
}
