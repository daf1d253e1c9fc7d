import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What the ingest log reports of its backlog (src/ingest/freshness.ts), read at each scrape. */
interface Backlog {
  rows: number;
  bytes: number;
  oldestCommittedAt: number | null;
}

/**
 * The service's Prometheus series (GET /metrics). One instance per app, each with its own
 * registry, so tests can build several. Every series is listed in docs/operations.md.
 */
/** The service's Prometheus series; the loader reports to it as its observer. */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'spendscope_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  readonly ingestRecords = new Counter({
    name: 'spendscope_ingest_records_total',
    help:
      'Records received by the ingest routes: accepted (new, appended to the log), duplicate (already stored), ' +
      'conflict (id already stored with different content: not stored), invalid (refused with a field error)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly ackSeconds = new Histogram({
    name: 'spendscope_ingest_ack_seconds',
    help: 'From a valid ingest batch to its acknowledgement: group commit into the log, evaluation and the disk flush',
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2],
    registers: [this.registry],
  });
  readonly loaderBlockRows = new Histogram({
    name: 'spendscope_loader_block_rows',
    help: 'Records per block the loader inserted into ClickHouse',
    buckets: [1, 10, 100, 1_000, 5_000, 10_000, 20_000, 50_000],
    registers: [this.registry],
  });
  readonly loaderInsertSeconds = new Histogram({
    name: 'spendscope_loader_insert_seconds',
    help: 'Duration of one block insert into ClickHouse (events and every rollup)',
    buckets: [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5],
    registers: [this.registry],
  });
  readonly setAside = new Counter({
    name: 'spendscope_loader_rows_set_aside_total',
    help: 'Records ClickHouse refused on their own, kept in the ingest_rejects table of the registry',
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'spendscope_rate_limited_total',
    help: 'Requests refused with 429 because their key was over its limit, by bucket: records (ingest) or requests (every other route)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly storeErrors = new Counter({
    name: 'spendscope_store_errors_total',
    help: 'Failed writes: ingest_log (a group commit, answered 503) or clickhouse (a loader insert, retried)',
    labelNames: ['store'] as const,
    registers: [this.registry],
  });

  readonly rpcRequests = new Counter({
    name: 'spendscope_chain_rpc_requests_total',
    help: 'JSON-RPC requests (HTTP requests, each a batch of calls) sent to a network\'s node by the settlement verifier',
    labelNames: ['network'] as const,
    registers: [this.registry],
  });
  readonly rpcCalls = new Counter({
    name: 'spendscope_chain_rpc_calls_total',
    help: 'JSON-RPC calls sent to a network\'s node (several per batched request)',
    labelNames: ['network'] as const,
    registers: [this.registry],
  });
  readonly rpcErrors = new Counter({
    name: 'spendscope_chain_rpc_errors_total',
    help: 'Failed JSON-RPC requests by kind: timeout, rate_limited (429), http (another status), network, invalid (not a JSON-RPC answer)',
    labelNames: ['network', 'kind'] as const,
    registers: [this.registry],
  });
  readonly settlementLag = new Gauge({
    name: 'spendscope_settlement_lag_seconds',
    help: 'Per network: how long the oldest record waiting for its check (pending) has waited since it was received; 0 when none waits',
    labelNames: ['network'] as const,
    registers: [this.registry],
  });
  readonly walletLagBlocks = new Gauge({
    name: 'spendscope_settlement_wallet_lag_blocks',
    help: 'Per network: confirmed blocks not yet scanned for transfers from registered wallets',
    labelNames: ['network'] as const,
    registers: [this.registry],
  });
  readonly settlements = new Gauge({
    name: 'spendscope_settlements',
    help: 'Checked records and unreported transfers, by network and status (pending, verified, mismatch, failed, not_found, unverifiable, unreported)',
    labelNames: ['network', 'status'] as const,
    registers: [this.registry],
  });

  constructor(options: { processMetrics?: boolean } = {}) {
    // Process figures (RSS, CPU, event loop lag) with the prom-client defaults' names.
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** Backlog gauges, read from the log's state at each scrape. */
  watchBacklog(freshness: { backlog(): Backlog }): void {
    const gauges: [string, string, (b: Backlog) => number][] = [
      ['spendscope_ingest_backlog_rows', 'Acknowledged records the loader has not inserted into ClickHouse yet', (b) => b.rows],
      ['spendscope_ingest_backlog_bytes', 'Their size in the ingest log', (b) => b.bytes],
      [
        'spendscope_ingest_backlog_age_seconds',
        'How long ago the oldest of them was acknowledged (0 when none)',
        (b) => (b.oldestCommittedAt === null ? 0 : Math.max(0, Date.now() - b.oldestCommittedAt) / 1000),
      ],
    ];
    for (const [name, help, read] of gauges) {
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read(freshness.backlog()));
        },
      });
    }
  }

  blockLoaded(rows: number, seconds: number): void {
    this.loaderBlockRows.observe(rows);
    this.loaderInsertSeconds.observe(seconds);
  }

  rowsSetAside(rows: number): void {
    this.setAside.inc(rows);
  }

  insertFailed(): void {
    this.storeErrors.inc({ store: 'clickhouse' });
  }

  /** The settlement verifier's JSON-RPC observer. */
  requested(network: string, calls: number): void {
    this.rpcRequests.inc({ network });
    this.rpcCalls.inc({ network }, calls);
  }

  failed(network: string, kind: string): void {
    this.rpcErrors.inc({ network, kind });
  }
}
