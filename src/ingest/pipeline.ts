import type { Logger } from 'pino';
import { AgentActivity } from '../agents/activity.js';
import type { AnomalyConfig, EvaluationConfig, IngestConfig, Retention } from '../config.js';
import { Evaluator } from '../evaluation/evaluator.js';
import type { SchemaRegistry } from '../http/validation.js';
import type { Metrics } from '../metrics/metrics.js';
import type { EventStore } from '../stores/clickhouse.js';
import type { Registry } from '../stores/sqlite.js';
import { Freshness } from './freshness.js';
import { GroupCommit } from './group-commit.js';
import { decimalsWith } from './assets.js';
import { Ingestor } from './ingestor.js';
import { Loader } from './loader.js';
import { IngestLog } from './log.js';

/** The write path, assembled: routes -> ingestor -> group commit into the log -> loader -> ClickHouse. */
export interface IngestPipeline {
  log: IngestLog;
  freshness: Freshness;
  commit: GroupCommit;
  loader: Loader;
  ingestor: Ingestor;
  evaluator: Evaluator | undefined;
  /** For evaluation: resolves true once ClickHouse holds what these teams acknowledged (false: not soon). */
  awaitLoaded(): Promise<boolean>;
  /** Refuses new writes, commits what is queued, stops the loader after its current block. */
  close(): Promise<void>;
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
}

/** Builds the write path and starts its loader. `evaluate: false` (the seed script) skips policies and alerts. */
export function startIngestPipeline(deps: IngestPipelineDeps, options: { evaluate?: boolean } = {}): IngestPipeline {
  const { config, registry, logger } = deps;
  const log = new IngestLog(registry, config.ingest.dedupWindowDays);
  const { loadedPos, unloaded } = Loader.state(registry);
  const freshness = new Freshness(loadedPos, unloaded);
  const loader = new Loader(
    registry,
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
  const evaluator = options.evaluate === false ? undefined : new Evaluator(registry, deps.events, config.anomalies, logger, awaitLoaded, config.evaluation);
  const commit = new GroupCommit(
    registry,
    log,
    freshness,
    { maxRows: config.ingest.backlogMaxRows, maxBytes: config.ingest.backlogMaxBytes },
    logger,
    evaluator,
    new AgentActivity(),
    deps.metrics,
    { groupMaxRows: config.ingest.groupMaxRows },
  );
  const ingestor = new Ingestor(deps.schemas, commit, deps.metrics, {
    decimalsOf: decimalsWith(config.ingest.assetDecimals),
    eventsTtlDays: config.retention.eventsTtlDays,
  });
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
    },
  };
}
