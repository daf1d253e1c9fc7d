import type { Logger } from 'pino';
import { AgentActivity } from '../agents/activity.js';
import type { AnomalyConfig, EvaluationConfig, IngestConfig, Retention } from '../config.js';
import { Evaluator } from '../evaluation/evaluator.js';
import type { SchemaRegistry } from '../http/validation.js';
import type { Metrics } from '../metrics/metrics.js';
import type { EventStore } from '../stores/clickhouse.js';
import type { SharedStore } from '../stores/postgres.js';
import { postgresOnly, type Database } from '../stores/sql.js';
import { walSyncer, type Registry } from '../stores/sqlite.js';
import { SyncThread } from '../stores/sync-thread.js';
import type { PolicyRevisions } from '../policies/revisions.js';
import { Freshness, type Backlog, type LoadFrontier, type TimeWindow } from './freshness.js';
import { GroupCommit, sharedCommits, sqliteCommits } from './group-commit.js';
import { decimalsWith } from '../domain/assets.js';
import { Ingestor } from './ingestor.js';
import { Loader } from './local-loader.js';
import { IngestLog } from './log.js';
import { SharedFreshness } from './shared-freshness.js';
import { SharedLoader } from './shared-loader.js';
import { SharedIngestLog } from './shared-log.js';
import { Checkpointer } from '../stores/checkpointer.js';
import type { RateBooks } from '../rates/books.js';

/**
 * The write path as the routes see it, whichever store holds the log: routes -> ingestor -> group
 * commit into the log -> loader -> ClickHouse.
 */
export interface IngestPath {
  freshness: {
    /** What is not in ClickHouse yet (the bound of GroupCommit.write; GET /healthz). */
    backlog(): Backlog;
    /** For a read: resolves once the team's acknowledged records (of event times in `times`, if given) are in ClickHouse, with the ms waited; a 503 otherwise. */
    caughtUp(teamId: string, timeoutMs: number, times?: TimeWindow): Promise<number>;
    /** How far ClickHouse surely holds the log (the settlement verifier's intake reads up to it). */
    loadFrontier(now?: number): LoadFrontier | Promise<LoadFrontier>;
  };
  loader: { readonly isFailing: boolean };
  commit: GroupCommit;
  ingestor: Ingestor;
  evaluator: Evaluator | undefined;
  /** For evaluation: resolves true once ClickHouse holds what these teams acknowledged (false: not soon). */
  awaitLoaded(): Promise<boolean>;
  /** Refuses new writes, commits what is queued, stops the loader after its current block. */
  close(): Promise<void>;
}

/** The write path of one instance, its log in the SQLite registry. */
export interface IngestPipeline extends IngestPath {
  log: IngestLog;
  freshness: Freshness;
  loader: Loader;
}

export interface IngestPipelineDeps {
  config: { ingest: IngestConfig; anomalies: AnomalyConfig; retention: Retention; evaluation?: EvaluationConfig };
  registry: Registry;
  /** The read session: evaluation reads running totals there. */
  events: EventStore;
  /** The loader's own session. */
  loaderEvents: EventStore;
  schemas: SchemaRegistry;
  logger: Logger;
  metrics?: Metrics;
  /** Raised by the routes' changes to policies and agents: the evaluator reloads a team's policies then. */
  policyRevisions: PolicyRevisions;
  /** The teams' currencies and rates, that value each record (without: the built-in pegs, in USD). */
  rates?: RateBooks;
}

/** Builds the write path and starts its loader. `evaluate: false` (the seed script) skips policies and alerts. */
export function startIngestPipeline(deps: IngestPipelineDeps, options: { evaluate?: boolean } = {}): IngestPipeline {
  const { config, registry, logger } = deps;
  const log = new IngestLog(registry, config.ingest.dedupWindowDays, { level0Keys: config.ingest.dedupLevel0Keys });
  // The registry's WAL is copied back off the event loop: the writer of the log commits, this thread checkpoints.
  const checkpointer = new Checkpointer(registry, logger);
  // The group commit and the loader share one WAL flush, on a thread of the pipeline's own.
  const syncThread = new SyncThread();
  const syncWal = walSyncer(registry, syncThread);
  const { loadedPos, unloaded } = Loader.state(registry);
  const freshness = new Freshness(loadedPos, unloaded);
  const loader = new Loader(
    registry,
    syncWal,
    deps.loaderEvents,
    freshness,
    { blockRows: config.ingest.loadBlockRows, intervalMs: config.ingest.loadIntervalMs },
    logger,
    deps.metrics,
  );
  deps.metrics?.watchBacklog(freshness);
  // Running totals read at the acknowledgement need every earlier record in ClickHouse: all that
  // the log holds (also a group still waiting for its disk flush, which the loader takes after it).
  // While the loader is failing there is no point in waiting for it.
  const awaitLoaded = async () => {
    if (loader.isFailing) return false;
    return freshness.waitFor(log.endPos - 1, Math.min(2_000, config.ingest.readWaitMs));
  };
  const evaluator = options.evaluate === false ? undefined : new Evaluator({ registry, store: deps.events, anomalies: config.anomalies, logger, awaitLoaded, limits: config.evaluation, revisions: deps.policyRevisions, rates: deps.rates });
  const { commit, ingestor } = groupCommitOf(deps, sqliteCommits(registry, syncWal), log, freshness, evaluator);
  loader.start();
  return {
    log,
    freshness,
    commit,
    loader,
    ingestor,
    evaluator,
    awaitLoaded,
    async close() {
      await commit.close();
      await loader.stop();
      log.stop();
      await checkpointer.stop();
      await syncThread.close();
    },
  };
}

/** The group commit and the ingestor in front of it, on either store. */
function groupCommitOf(
  deps: Pick<IngestPipelineDeps, 'config' | 'logger' | 'metrics' | 'schemas' | 'rates'>,
  store: ConstructorParameters<typeof GroupCommit>[0],
  log: ConstructorParameters<typeof GroupCommit>[1],
  freshness: ConstructorParameters<typeof GroupCommit>[2],
  evaluator: Evaluator | undefined,
): { commit: GroupCommit; ingestor: Ingestor } {
  const { config } = deps;
  const commit = new GroupCommit(
    store,
    log,
    freshness,
    { maxRows: config.ingest.backlogMaxRows, maxBytes: config.ingest.backlogMaxBytes },
    deps.logger,
    evaluator,
    new AgentActivity(),
    deps.metrics,
    { groupMaxRows: config.ingest.groupMaxRows },
  );
  const ingestor = new Ingestor(
    deps.schemas,
    commit,
    deps.metrics,
    { decimalsOf: decimalsWith(config.ingest.assetDecimals), eventsTtlDays: config.retention.eventsTtlDays },
    deps.rates,
  );
  return { commit, ingestor };
}

export interface SharedIngestPipelineDeps extends Omit<IngestPipelineDeps, 'registry'> {
  pool: SharedStore;
  db: Database;
}

/** How often the claims' day partitions are made ahead and the unread totals pruned. */
const UPKEEP_MS = 3_600_000;
/** Totals of windows that ended this long ago are deleted: no record can count into them any more. */
const TOTALS_KEPT_MS = 2 * 86_400_000;

/**
 * The write path of an instance that shares PostgreSQL with others (DATABASE_URL): the same
 * ingestor, group commit and evaluator, on the shared log (./shared-log.ts), loaded by whichever
 * instance holds the loader's lock (./shared-loader.ts), the running totals in `spend_totals`.
 */
export async function startSharedIngestPipeline(deps: SharedIngestPipelineDeps): Promise<IngestPath> {
  const { config, db, logger } = deps;
  const log = new SharedIngestLog(config.ingest.dedupWindowDays);
  // Today's and tomorrow's claim partitions before the first claim; then hourly, well before midnight.
  const upkeep = async () => {
    await log.rollPartitions(db, Date.now());
    await db.run(postgresOnly('DELETE FROM spend_totals WHERE window_end < $1'), [Date.now() - TOTALS_KEPT_MS]);
  };
  await upkeep();
  const timer = setInterval(() => void upkeep().catch((err: unknown) => logger.error({ err }, 'shared store upkeep failed; retrying within the hour')), UPKEEP_MS);
  timer.unref();
  const freshness = new SharedFreshness(db);
  await freshness.start();
  deps.metrics?.watchBacklog(freshness);
  const loader = new SharedLoader(deps.pool, db, deps.loaderEvents, { blockRows: config.ingest.loadBlockRows, intervalMs: config.ingest.loadIntervalMs }, logger, deps.metrics);
  // Every chunk committed before, on any instance (see the SQLite pipeline's awaitLoaded).
  const awaitLoaded = () => freshness.waitFor(undefined, Math.min(2_000, config.ingest.readWaitMs));
  const evaluator = new Evaluator({ shared: db, store: deps.events, anomalies: config.anomalies, logger, awaitLoaded, limits: config.evaluation, revisions: deps.policyRevisions, rates: deps.rates });
  const { commit, ingestor } = groupCommitOf(deps, sharedCommits(db), log, freshness, evaluator);
  loader.start();
  return {
    freshness,
    commit,
    loader,
    ingestor,
    evaluator,
    awaitLoaded,
    async close() {
      clearInterval(timer);
      await commit.close();
      await loader.stop();
      freshness.stop();
    },
  };
}
